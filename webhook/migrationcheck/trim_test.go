package migrationcheck

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TrimVMI serves both the manager's cache and `migranet status -w`'s. Fault caught: a field
// targetpod.Render reads dropped (the VMI's tolerations, affinity or CPU model then judged absent:
// migrations the scheduler cannot place admitted, or tolerating VMIs refused).
func TestTrimVMI(t *testing.T) {
	state := &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "u", SourceNode: "a", TargetNode: "b", Mode: kubevirtv1.MigrationPostCopy}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
	tolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	cpu := &kubevirtv1.CPU{Model: "Skylake-Server", Features: []kubevirtv1.CPUFeature{{Name: "pcid"}}, DedicatedCPUPlacement: true}
	hyperv := &kubevirtv1.FeatureHyperv{}
	tsc := int64(1)
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "x", ResourceVersion: "7", Labels: map[string]string{"big": "label"}},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
			Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{}}, CPU: cpu, Machine: &kubevirtv1.Machine{Type: "q35"},
			Features: &kubevirtv1.Features{Hyperv: hyperv, ACPI: kubevirtv1.FeatureState{}}, Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "d"}}}},
			NodeSelector: map[string]string{"a": "b"}, Affinity: affinity, Tolerations: tolerations, TopologySpreadConstraints: spread, Architecture: "amd64",
			PriorityClassName: "vm-critical"},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "a", Phase: kubevirtv1.Running, MigrationState: state, Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "eth0"}},
			Machine: &kubevirtv1.Machine{Type: "pc-q35-rhel9.6.0"}, TopologyHints: &kubevirtv1.TopologyHints{TSCFrequency: &tsc}},
	}
	out, err := TrimVMI(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*kubevirtv1.VirtualMachineInstance)
	want := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "x", ResourceVersion: "7"},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{"a": "b"}, Affinity: affinity, Tolerations: tolerations,
			TopologySpreadConstraints: spread, Architecture: "amd64", PriorityClassName: "vm-critical",
			Domain: kubevirtv1.DomainSpec{CPU: cpu, Machine: &kubevirtv1.Machine{Type: "q35"}, Features: &kubevirtv1.Features{Hyperv: hyperv}}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "a", Phase: kubevirtv1.Running, MigrationState: state,
			Machine: &kubevirtv1.Machine{Type: "pc-q35-rhel9.6.0"}, TopologyHints: &kubevirtv1.TopologyHints{TSCFrequency: &tsc}},
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("trimmed VMI (-want +got):\n%s", d)
	}
	if other, _ := TrimVMI("not a vmi"); other != "not a vmi" {
		t.Errorf("other objects must pass through, got %v", other)
	}
}
