package migrationcheck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// targetPod is a migration target pod of migration uid as virt-controller labels it, bound to node
// ("" for pending).
func targetPod(uid types.UID, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-" + string(uid), Namespace: checktest.NS,
		Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: string(uid)}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// TestCountedAs: how one migration counts against the nodes' budgets. Faults caught, each seen to
// fail once: the VMI's migration state read without checking its migration UID (an earlier,
// completed migration of the VMI made this one finished: "an older migration's state" row, the near
// miss); a hotplug attachment pod (same job label, another kubevirt.io value) taken as the target
// ("attachment pod" row); a Failed target pod's node counted; post-copy counted.
func TestCountedAs(t *testing.T) {
	m := checktest.VMIM("mig", checktest.VMIName, kubevirtv1.MigrationScheduling)
	vmi := checktest.VMI("node-0", nil)
	withState := func(uid types.UID, mode kubevirtv1.MigrationMode, completed bool, source, target string) *kubevirtv1.VirtualMachineInstance {
		v := vmi.DeepCopy()
		v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: uid, Mode: mode, Completed: completed,
			SourceNode: source, TargetNode: target}
		return v
	}
	attachment := targetPod(m.UID, "node-9", corev1.PodRunning)
	attachment.Labels[kubevirtv1.AppLabel] = "hotplug-disk"
	tests := []struct {
		name    string
		vmim    *kubevirtv1.VirtualMachineInstanceMigration
		vmi     *kubevirtv1.VirtualMachineInstance
		targets []*corev1.Pod
		want    Counted
	}{
		{name: "no target pod yet: out of the VMI's node, into none", vmim: m, vmi: vmi, want: Counted{Why: CountedPending, Source: "node-0"}},
		{name: "target pod pending: the same, placing", vmim: m, vmi: vmi, targets: []*corev1.Pod{targetPod(m.UID, "", corev1.PodPending)},
			want: Counted{Why: CountedPending, Source: "node-0", Placing: true}},
		{name: "target pod bound: into its node", vmim: m, vmi: vmi, targets: []*corev1.Pod{targetPod(m.UID, "node-2", corev1.PodPending)},
			want: Counted{Why: CountedStreaming, Source: "node-0", Target: "node-2"}},
		{name: "attachment pod bound, target pending: into none", vmim: m, vmi: vmi, targets: []*corev1.Pod{attachment, targetPod(m.UID, "", corev1.PodPending)},
			want: Counted{Why: CountedPending, Source: "node-0", Placing: true}},
		{name: "failed target pod: its node not counted", vmim: m, vmi: vmi, targets: []*corev1.Pod{targetPod(m.UID, "node-2", corev1.PodFailed)},
			want: Counted{Why: CountedPending, Source: "node-0"}},
		{name: "the VMI's migration state names both nodes", vmim: m, vmi: withState(m.UID, kubevirtv1.MigrationPreCopy, false, "node-0", "node-1"),
			want: Counted{Why: CountedStreaming, Source: "node-0", Target: "node-1"}},
		{name: "an older migration's state (completed, another UID): this one still counts", vmim: m,
			vmi: withState("uid-older", kubevirtv1.MigrationPreCopy, true, "node-5", "node-0"), targets: []*corev1.Pod{targetPod(m.UID, "node-2", corev1.PodRunning)},
			want: Counted{Why: CountedStreaming, Source: "node-0", Target: "node-2"}},
		{name: "its own state completed: finished", vmim: m, vmi: withState(m.UID, kubevirtv1.MigrationPreCopy, true, "node-0", "node-1"),
			want: Counted{Why: NotCountedFinished}},
		{name: "post-copy: not counted", vmim: m, vmi: withState(m.UID, kubevirtv1.MigrationPostCopy, false, "node-0", "node-1"),
			want: Counted{Why: NotCountedPostCopy}},
		{name: "VMIM Succeeded: finished", vmim: checktest.VMIM("mig", checktest.VMIName, kubevirtv1.MigrationSucceeded), vmi: vmi,
			want: Counted{Why: NotCountedFinished}},
		{name: "VMIM Failed: finished", vmim: checktest.VMIM("mig", checktest.VMIName, kubevirtv1.MigrationFailed), vmi: vmi,
			want: Counted{Why: NotCountedFinished}},
		{name: "VMI unknown: into its target, out of none", vmim: m, targets: []*corev1.Pod{targetPod(m.UID, "node-2", corev1.PodRunning)},
			want: Counted{Why: CountedStreaming, Target: "node-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CountedAs(tt.vmim, tt.vmi, tt.targets); got != tt.want {
				t.Errorf("CountedAs = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestCountTraffic: the per-node counts over several migrations. Faults caught, each seen to fail
// once: a migration whose target is its source (a VMI restarted on its node) counted into it; a
// finished migration counted; a migration bound into its own source counted as pending (Pending is
// the migrations no node counts into: b only; d is placed); Placing is b alone.
func TestCountTraffic(t *testing.T) {
	a := checktest.VMIM("a", "vm-a", kubevirtv1.MigrationRunning)
	b := checktest.VMIM("b", "vm-b", kubevirtv1.MigrationScheduling)
	c := checktest.VMIM("c", "vm-c", kubevirtv1.MigrationSucceeded)
	d := checktest.VMIM("d", "vm-d", kubevirtv1.MigrationRunning)
	e := checktest.VMIM("e", "vm-e", kubevirtv1.MigrationPending) // KubeVirt made no target pod yet
	vmis := map[string]string{"vm-a": "node-0", "vm-b": "node-0", "vm-c": "node-1", "vm-d": "node-3", "vm-e": "node-4"}
	pods := map[types.UID]*corev1.Pod{a.UID: targetPod(a.UID, "node-2", corev1.PodRunning), b.UID: targetPod(b.UID, "", corev1.PodPending),
		c.UID: targetPod(c.UID, "node-2", corev1.PodRunning), d.UID: targetPod(d.UID, "node-3", corev1.PodRunning)}
	got := CountTraffic([]*kubevirtv1.VirtualMachineInstanceMigration{a, b, c, d, e, nil},
		func(_, name string) *kubevirtv1.VirtualMachineInstance { return checktest.VMI(vmis[name], nil) },
		func(uid types.UID) []*corev1.Pod {
			if p := pods[uid]; p != nil {
				return []*corev1.Pod{p}
			}
			return nil
		})
	if got.Counted != 4 || len(got.In) != 1 || got.In["node-2"] != 1 || len(got.Out) != 3 || got.Out["node-0"] != 2 || got.Out["node-3"] != 1 || got.Out["node-4"] != 1 {
		t.Errorf("traffic = %+v, want 4 counted, in {node-2:1}, out {node-0:2 node-3:1 node-4:1}", got)
	}
	if got.Pending != 2 {
		t.Errorf("pending = %d, want 2 (b: its target pod is not bound; e: it has none)", got.Pending)
	}
	if !got.IsPlacing(b.UID) || got.IsPlacing(a.UID) || got.IsPlacing(d.UID) || got.IsPlacing(c.UID) || got.IsPlacing(e.UID) || len(got.Placing) != 1 {
		t.Errorf("placing = %v, want b only: not a or d (bound: counted into their nodes, the near miss), not c (Succeeded), not e (no target pod)", got.Placing)
	}
	if !got.Knows(a.UID) || !got.Knows(c.UID) || got.Knows("uid-never") {
		t.Errorf("knows %v, want every migration passed (a to d), not uid-never", got.seen)
	}
}
