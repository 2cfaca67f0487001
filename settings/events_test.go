package settings

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What the path-abort controller records about a migration comes back as the story reads it: the
// nodes, start, address, mode and network, under the migration's own UID, and nothing of what a
// story does not tell (ports, the source pod). Faults caught: the UID left out of the record or
// the subject (a later same-named migration would read alike), a record that does not decode.
func TestMigrationEventAnnotations(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 22, 9, 56, 48, 0, time.UTC))
	nad := "kubevirt/vm-migration-network-0123456789"
	live := &kubevirtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: "other-in-the-live-state", SourceNode: "node-1", TargetNode: "node-2", StartTimestamp: &start,
		TargetNodeAddress: "192.168.100.12", Mode: kubevirtv1.MigrationPreCopy, MigrationNetworkType: kubevirtv1.Migration,
		VMIMConfigurationOptions:       &kubevirtv1.VMIMConfigurationOptions{Network: &nad},
		TargetDirectMigrationNodePorts: map[string]int{"49152": 1}, SourcePod: "virt-launcher-vm1-abcde",
	}
	ann := MigrationEventAnnotations("m", "uid-1", live)
	if ann[AnnotationMigration] != "m" || ann[AnnotationMigrationUID] != "uid-1" {
		t.Fatalf("annotations %v", ann)
	}
	want := &kubevirtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: "uid-1", SourceNode: "node-1", TargetNode: "node-2", StartTimestamp: &start,
		TargetNodeAddress: "192.168.100.12", Mode: kubevirtv1.MigrationPreCopy, MigrationNetworkType: kubevirtv1.Migration,
		VMIMConfigurationOptions: &kubevirtv1.VMIMConfigurationOptions{Network: &nad},
	}
	if d := gocmp.Diff(want, RecordedMigrationState(ann)); d != "" {
		t.Errorf("recorded state (-want +got):\n%s", d)
	}
	for name, tc := range map[string]struct {
		ann  map[string]string
		want bool
	}{
		"no state given":   {MigrationEventAnnotations("m", "uid-1", nil), false},
		"not JSON":         {map[string]string{AnnotationMigrationState: "node-1 -> node-2"}, false},
		"another key":      {map[string]string{"migranet.io/migration-states": ann[AnnotationMigrationState]}, false},
		"the record alone": {map[string]string{AnnotationMigrationState: ann[AnnotationMigrationState]}, true},
	} {
		if got := RecordedMigrationState(tc.ann) != nil; got != tc.want {
			t.Errorf("%s: recorded %v, want %v", name, got, tc.want)
		}
	}
	if _, ok := MigrationEventAnnotations("m", "", live)[AnnotationMigrationUID]; ok {
		t.Error("a migration without a UID (a refusal) has no UID annotation")
	}
	for _, tc := range []struct{ name, uid, want string }{
		{"m", "uid-1", "migration m (uid uid-1)"},
		{"m", "", "migration m"},
	} {
		if got := MigrationSubject(tc.name, types.UID(tc.uid)); got != tc.want {
			t.Errorf("MigrationSubject(%q, %q) = %q, want %q", tc.name, tc.uid, got, tc.want)
		}
	}
}
