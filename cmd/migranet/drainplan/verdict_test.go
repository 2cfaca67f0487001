package drainplan

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func strategy(s kubevirtv1.EvictionStrategy) *kubevirtv1.EvictionStrategy { return &s }

func vmiWith(s *kubevirtv1.EvictionStrategy, migratable corev1.ConditionStatus, reason string) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}}
	v.Spec.EvictionStrategy = s
	v.Status.Phase, v.Status.NodeName = kubevirtv1.Running, "node-1"
	if migratable != "" {
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: migratable, Reason: reason, Message: "cannot migrate"}}
	}
	return v
}

func TestEvictionOf(t *testing.T) {
	live, ifPossible := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	for _, tc := range []struct {
		name     string
		vmi      *kubevirtv1.VirtualMachineInstance
		cluster  *kubevirtv1.EvictionStrategy
		verdict  string
		migrates bool
		why      string
	}{
		{"LiveMigrate, migratable", vmiWith(&live, corev1.ConditionTrue, ""), nil, Moves, true, ""},
		{"LiveMigrateIfPossible, migratable", vmiWith(&ifPossible, corev1.ConditionTrue, ""), nil, Moves, true, ""},
		// The near miss pair: the same VMI that cannot move; LiveMigrate blocks the drain,
		// LiveMigrateIfPossible lets the drain stop it.
		{"LiveMigrate, not migratable", vmiWith(&live, corev1.ConditionFalse, kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable), nil, Blocks, false,
			"LiveMigratable is False (DisksNotLiveMigratable: cannot migrate): virt-api refuses the eviction"},
		{"LiveMigrateIfPossible, not migratable", vmiWith(&ifPossible, corev1.ConditionFalse, kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable), nil, Stops, false,
			"LiveMigrateIfPossible but LiveMigratable is False (DisksNotLiveMigratable"},
		{"None", vmiWith(strategy(kubevirtv1.EvictionStrategyNone), corev1.ConditionTrue, ""), nil, Stops, false, "evictionStrategy None (the VMI's spec.evictionStrategy)"},
		{"External", vmiWith(strategy(kubevirtv1.EvictionStrategyExternal), corev1.ConditionTrue, ""), nil, Waits, false, "external controller"},
		{"none anywhere", vmiWith(nil, corev1.ConditionTrue, ""), nil, Stops, false, "no evictionStrategy"},
		{"the cluster's LiveMigrate", vmiWith(nil, corev1.ConditionTrue, ""), &live, Moves, true, ""},
		{"the cluster's None", vmiWith(nil, corev1.ConditionTrue, ""), strategy(kubevirtv1.EvictionStrategyNone), Stops, false, "KubeVirt CR's spec.configuration.evictionStrategy"},
		{"the VMI's own wins over the cluster's", vmiWith(strategy(kubevirtv1.EvictionStrategyNone), corev1.ConditionTrue, ""), &live, Stops, false, "the VMI's spec.evictionStrategy"},
		{"LiveMigrate, no condition reported yet", vmiWith(&live, "", ""), nil, Blocks, false, "KubeVirt has not reported LiveMigratable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := EvictionOf(tc.vmi, tc.cluster)
			if e.Verdict != tc.verdict || e.Migrates != tc.migrates {
				t.Errorf("verdict %s migrates %v, want %s %v (%s)", e.Verdict, e.Migrates, tc.verdict, tc.migrates, e.Why)
			}
			if !strings.Contains(e.Why, tc.why) {
				t.Errorf("why %q lacks %q", e.Why, tc.why)
			}
		})
	}
	hd := vmiWith(&live, corev1.ConditionFalse, kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable)
	hd.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "nic0"}}
	if e := EvictionOf(hd, nil); e.Verdict != Blocks || !strings.Contains(e.Why, "HostDeviceNotLiveMigratable") || !strings.Contains(e.Why, "host device nic0") {
		t.Errorf("host device: %+v", e)
	}
	done := vmiWith(&live, corev1.ConditionTrue, "")
	done.Status.Phase = kubevirtv1.Succeeded
	if e := EvictionOf(done, nil); e.Verdict != Skipped {
		t.Errorf("a finished VMI: %+v", e)
	}
}

func TestStorageNote(t *testing.T) {
	v := vmiWith(nil, corev1.ConditionTrue, "")
	if n := StorageNote(v); n != "" {
		t.Errorf("no condition: %q", n)
	}
	v.Status.Conditions = append(v.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable,
		Status: corev1.ConditionFalse, Reason: "NotMigratable", Message: "a hostpath volume"})
	if n := StorageNote(v); !strings.Contains(n, "StorageLiveMigratable is False (NotMigratable: a hostpath volume)") {
		t.Errorf("note %q", n)
	}
}
