package migrationcheck

import (
	"context"
	"maps"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// listRecorder records the options of the one list it answers.
type listRecorder struct {
	client.Reader
	items []kubevirtv1.VirtualMachineInstanceMigration
	opts  *client.ListOptions
}

func (l *listRecorder) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.opts = (&client.ListOptions{}).ApplyOptions(opts)
	list.(*kubevirtv1.VirtualMachineInstanceMigrationList).Items = append([]kubevirtv1.VirtualMachineInstanceMigration(nil), l.items...)
	return nil
}

// TestAPIStateMigrationsOf: the API server has no index on spec.vmiName, so APIState lists the
// namespace without a field selector and keeps the VMIMs of the VMI.
func TestAPIStateMigrationsOf(t *testing.T) {
	l := &listRecorder{items: []kubevirtv1.VirtualMachineInstanceMigration{*vmim("a", "vm", ""), *vmim("b", "other", ""), *vmim("c", "vm", "")}}
	got, err := (&APIState{Reader: l}).MigrationsOf(context.Background(), testNS, "vm")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if d := gocmp.Diff([]string{"a", "c"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if l.opts.FieldSelector != nil && !l.opts.FieldSelector.Empty() || l.opts.Namespace != testNS {
		t.Errorf("the API server was asked with field selector %v in namespace %q", l.opts.FieldSelector, l.opts.Namespace)
	}
}

// TestAPIStateTraffic: `migranet preflight` counts the migrations in flight as the webhook does,
// from the API server (b finished, not counted). Faults caught, each seen to fail once: a pod
// that only carries the label of a migration not listed counted (the stray pod on node-3); the
// target pods not found (a counted as pending, into no node).
func TestAPIStateTraffic(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kubevirtv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	a := vmim("a", "vm-a", kubevirtv1.MigrationRunning)
	b := vmim("b", "vm-b", kubevirtv1.MigrationSucceeded)
	vmiA, vmiB := vmi("node-0", nil), vmi("node-1", nil)
	vmiA.Name, vmiB.Name = "vm-a", "vm-b"
	stray := targetPod("uid-gone", "node-3", corev1.PodRunning)
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, vmiA, vmiB,
		targetPod(a.UID, "node-2", corev1.PodRunning), targetPod(b.UID, "node-1", corev1.PodRunning), stray).Build()
	got, err := (&APIState{Reader: api}).Traffic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Counted != 1 || got.Pending != 0 || !maps.Equal(got.In, map[string]int{"node-2": 1}) || !maps.Equal(got.Out, map[string]int{"node-0": 1}) {
		t.Errorf("traffic %+v, want a only: node-0 -> node-2", got)
	}
}
