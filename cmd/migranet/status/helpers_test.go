package status

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the tests' fixed clock.
var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(now.Add(-d))
	return &t
}

const vmimUID = types.UID("11111111-2222-3333-4444-555555555555")

// vmimOpt and vmiOpt change the objects a case starts from.
type (
	vmimOpt func(*kubevirtv1.VirtualMachineInstanceMigration)
	vmiOpt  func(*kubevirtv1.VirtualMachineInstance)
)

// newVMIM is migration "move-vm1" of "vm1" in namespace "apps", created 5 minutes ago.
func newVMIM(opts ...vmimOpt) *kubevirtv1.VirtualMachineInstanceMigration {
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "move-vm1", UID: vmimUID, CreationTimestamp: *ago(5 * time.Minute)},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// newVMI is "vm1" running on node-1.
func newVMI(opts ...vmiOpt) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "vm1"},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "node-1"},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func phase(p kubevirtv1.VirtualMachineInstanceMigrationPhase) vmimOpt {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) { m.Status.Phase = p }
}

func condition(t kubevirtv1.VirtualMachineInstanceMigrationConditionType, reason, message string) vmimOpt {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Status.Conditions = append(m.Status.Conditions, kubevirtv1.VirtualMachineInstanceMigrationCondition{
			Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message})
	}
}

func transition(p kubevirtv1.VirtualMachineInstanceMigrationPhase, at *metav1.Time) vmimOpt {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: *at})
	}
}

func deleting() vmimOpt {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) { m.DeletionTimestamp = ago(time.Second) }
}

// vmimState sets the VMIM's own copy of the migration state.
func vmimState(opts ...stateOpt) vmimOpt {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) { m.Status.MigrationState = state(opts...) }
}

// vmiState sets the VMI's migration state.
func vmiState(opts ...stateOpt) vmiOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.Status.MigrationState = state(opts...) }
}

type stateOpt func(*kubevirtv1.VirtualMachineInstanceMigrationState)

// state is a migration state of vmimUID from node-1 to node-2, started 3m12s ago.
func state(opts ...stateOpt) *kubevirtv1.VirtualMachineInstanceMigrationState {
	s := &kubevirtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: vmimUID, SourceNode: "node-1", TargetNode: "node-2",
		StartTimestamp: ago(3*time.Minute + 12*time.Second), MigrationNetworkType: kubevirtv1.Migration,
		TargetNodeAddress: "192.168.100.12",
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func mode(m kubevirtv1.MigrationMode) stateOpt {
	return func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.Mode = m }
}

func notStarted() stateOpt {
	return func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.StartTimestamp = nil }
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/migranet/status -update writes it)", err)
	}
	if d := gocmp.Diff(string(want), got); d != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, d)
	}
}

// goldenNames lists testdata/<prefix>*.golden without the extension.
func goldenNames(t *testing.T, prefix string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", prefix+"*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[strings.TrimSuffix(filepath.Base(f), ".golden")] = true
	}
	return names
}
