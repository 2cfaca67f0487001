package status

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// ev is an event of reason on object kind/name in namespace apps, seen d ago.
func ev(kind, name, reason, msg string, d time.Duration, ann ...string) corev1.Event {
	e := corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name + "." + reason},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "apps", Name: name},
		Reason:         reason, Message: msg, LastTimestamp: *ago(d)}
	if kind == "VirtualMachineInstanceMigration" {
		e.InvolvedObject.UID = vmimUID
	}
	if len(ann) == 2 {
		e.Annotations = map[string]string{ann[0]: ann[1]}
	}
	return e
}

const brokenPath = "migration path node-1 -> node-2 failed while the migration streamed: 9000-byte frames from node-1 to node-2 do not arrive (largest that crossed: 1500); check the uplink MTU of both nodes and of the switch ports between them; aborted by migranet (rule runningPathHealthy)"

func targetPod(node string, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "virt-launcher-vm1-target"},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Conditions: conds}}
}

func withMemory(q string) vmiOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		m := resource.MustParse(q)
		v.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: &m}
	}
}

// Faults caught (each injected once into Explain and seen to fail its golden file): a refusal of
// another migration of the same VMI taken for this one ("refused" carries a near miss), the abort
// annotation or event ignored (the aborted story reads "cancelled"), the scheduler's reason not
// read from the pod's condition, the stuck failure's advice lost, slowness not compared with
// SlowAfter, events of another migration of the same name (other UID) counted.
func TestExplain(t *testing.T) {
	steered := ev("VirtualMachineInstanceMigration", "move-vm1", settings.ReasonTargetSteered,
		"target pod kept off node-3 (path from node-1 failing: 9000-byte frames from node-1 to node-3 do not arrive)", 3*time.Minute)
	warned := ev("VirtualMachineInstance", "vm1", settings.ReasonMigrationWarned,
		"migration move-vm1 admitted with warnings:\nmigranet pathHealthy: node-3 unverified (node-3's probe agent has not completed a round yet)", 5*time.Minute,
		settings.AnnotationMigration, "move-vm1")
	ended := func(d time.Duration) stateOpt {
		return func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.EndTimestamp = ago(d) }
	}
	failed := func(reason string) stateOpt {
		return func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.Failed, s.FailureReason = true, reason }
	}
	completed := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.Completed = true }
	aborted := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.AbortRequested, s.AbortStatus = true, kubevirtv1.MigrationAbortSucceeded
	}
	for _, tt := range []struct {
		name  string
		story Story
	}{
		{"refused", Story{Name: "move-vm1", VMIName: "vm1", VMI: newVMI(), Events: []corev1.Event{
			// near miss: another migration of the same VMI refused, more recently
			ev("VirtualMachineInstance", "vm1", settings.ReasonMigrationRefused, "migration move-vm1-old refused by migranet kubevirtReady: KubeVirt is not ready", 30*time.Second),
			ev("VirtualMachineInstance", "vm1", settings.ReasonMigrationRefused,
				"migration move-vm1 refused by migranet pathHealthy: no target with a healthy migration path from node-1: node-2: 9000-byte frames from node-1 to node-2 do not arrive (largest that crossed: 1500); node-3: no probe from node-1 reaches node-3 and nothing comes back", time.Minute),
		}}},
		{"pending-full-exclusion", Story{Name: "move-vm1", UID: vmimUID, VMIName: "vm1",
			VMIM: newVMIM(phase(kubevirtv1.MigrationScheduling)), VMI: newVMI(),
			TargetPod: targetPod("", corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match the requested node fields"}),
			Events: []corev1.Event{ev("VirtualMachineInstanceMigration", "move-vm1", settings.ReasonNoTargetLeft,
				"target pod kept off node-2, node-3 (paths from node-1 failing); no node is left", 4*time.Minute)}}},
		{"aborted-by-rule", Story{Name: "move-vm1", UID: vmimUID, VMIName: "vm1",
			VMI:       newVMI(withMemory("2Gi"), vmiState(mode(kubevirtv1.MigrationPreCopy), aborted, failed("Live migration aborted "), ended(2*time.Minute))),
			TargetPod: nil, PathNow: "failing: 9000-byte frames from node-1 to node-2 do not arrive (largest that crossed: 1500)",
			Events: []corev1.Event{warned, steered,
				ev("VirtualMachineInstanceMigration", "move-vm1", settings.ReasonMigrationPathBroken, brokenPath, 2*time.Minute),
				// near miss: another migration of the same name (another UID), seen later
				func() corev1.Event {
					e := ev("VirtualMachineInstanceMigration", "move-vm1", settings.ReasonMigrationPathBroken, "a newer one of another migration of that name", time.Minute)
					e.InvolvedObject.UID = "other"
					return e
				}()}}},
		{"failed-stalled-stream", Story{Name: "move-vm1", UID: vmimUID, VMIName: "vm1",
			VMIM:      newVMIM(phase(kubevirtv1.MigrationFailed)),
			VMI:       newVMI(vmiState(failed("Live migration stuck for 150 seconds and has been aborted"), ended(time.Minute))),
			TargetPod: targetPod("node-2"), PathNow: "verified",
			Events: []corev1.Event{steered}}},
		{"succeeded-slow", Story{Name: "move-vm1", UID: vmimUID, VMIName: "vm1",
			VMIM:      newVMIM(phase(kubevirtv1.MigrationSucceeded)),
			VMI:       newVMI(withMemory("4Gi"), vmiState(completed, ended(time.Second))),
			TargetPod: targetPod("node-2"), PathNow: "verified", Events: []corev1.Event{warned}}},
		{"succeeded-fast", Story{Name: "move-vm1", UID: vmimUID, VMIName: "vm1",
			VMIM:      newVMIM(phase(kubevirtv1.MigrationSucceeded)),
			VMI:       newVMI(withMemory("4Gi"), vmiState(completed, ended(3*time.Minute+2*time.Second))),
			TargetPod: targetPod("node-2"), PathNow: "verified"}},
		{"not-found", Story{Name: "move-vm1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.story.Namespace, tt.story.Now = "apps", now
			var b strings.Builder
			if err := Explain(tt.story).Write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, "explain-"+tt.name, b.String())
		})
	}
}

// The list view's one-line cause of a migration migranet is aborting: the annotation it sets
// before the delete.
func TestCombineAbortedByMigranet(t *testing.T) {
	m := newVMIM(deleting(), func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Annotations = map[string]string{settings.AbortedAnnotation: brokenPath}
	})
	r := Combine(m, newVMI(vmiState()), now)
	if r.State != StateCancelling || !strings.HasPrefix(r.Reason, "aborted by migranet: migration path node-1 -> node-2 failed") {
		t.Fatalf("state %q reason %q", r.State, r.Reason)
	}
	if r := Combine(newVMIM(deleting()), newVMI(vmiState()), now); r.Reason != "migration deleted" {
		t.Fatalf("near miss (no annotation): reason %q", r.Reason)
	}
}
