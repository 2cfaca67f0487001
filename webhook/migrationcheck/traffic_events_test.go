package migrationcheck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// TestTrafficEvents: which VMI and pod events make the traffic be counted again. Faults caught,
// each seen to fail once: a VMI update that only moved its node (no migration state either side:
// a VMI restarted elsewhere) ignored; the target node's arrival in the migration state ignored;
// any VMI update recounting (the "annotations only" near miss: in a large cluster every VMI
// status write would recount); a hotplug attachment pod counted as a target pod event.
func TestTrafficEvents(t *testing.T) {
	vmi := checktest.VMI("node-0", nil)
	withState := func(target string, completed bool) *kubevirtv1.VirtualMachineInstance {
		v := vmi.DeepCopy()
		v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "uid-mig", SourceNode: "node-0", TargetNode: target, Completed: completed}
		return v
	}
	annotated := withState("node-1", false)
	annotated.Annotations = map[string]string{"a": "b"}
	moved := vmi.DeepCopy()
	moved.Status.NodeName = "node-3"
	vmiTests := []struct {
		name     string
		old, new *kubevirtv1.VirtualMachineInstance
		want     bool
	}{
		{"annotations only (near miss)", withState("node-1", false), annotated, false},
		{"no migration state either side, same node", vmi, vmi.DeepCopy(), false},
		{"no migration state either side, node moved", vmi, moved, true},
		{"a migration starts", vmi, withState("", false), true},
		{"its target node is known", withState("", false), withState("node-1", false), true},
		{"it completes", withState("node-1", false), withState("node-1", true), true},
	}
	for _, tt := range vmiTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := migrationStateChanged(tt.old, tt.new); got != tt.want {
				t.Errorf("migrationStateChanged = %v, want %v", got, tt.want)
			}
		})
	}
	attachment := targetPod("uid-mig", "node-1", corev1.PodRunning)
	attachment.Labels[kubevirtv1.AppLabel] = "hotplug-disk"
	launcher := targetPod("uid-mig", "node-1", corev1.PodRunning)
	delete(launcher.Labels, kubevirtv1.MigrationJobLabel)
	for name, tt := range map[string]struct {
		objs []any
		want bool
	}{
		"target pod": {[]any{targetPod("uid-mig", "", corev1.PodPending)}, true},
		"target pod deleted (tombstone unpacked)": {[]any{deletedObj(targetPodTombstone())}, true},
		"hotplug attachment pod (near miss)":      {[]any{attachment}, false},
		"the VMI's own launcher pod":              {[]any{launcher}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := isTargetPodEvent(tt.objs...); got != tt.want {
				t.Errorf("isTargetPodEvent = %v, want %v", got, tt.want)
			}
		})
	}
}

func targetPodTombstone() any {
	return toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: targetPod("uid-mig", "node-1", corev1.PodRunning)}
}
