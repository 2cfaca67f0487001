package migrationcheck

import (
	"context"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
