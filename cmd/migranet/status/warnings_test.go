package status

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings"
)

// TestAttachWarnings: a row takes the warnings of the event on its VMI that names its migration
// by name and UID; an event without a UID (recorded before events carried one) counts from the
// migration's creation second on. Each case is one event and a near miss beside it. Faults
// caught, each seen to fail once: the UID not compared (another UID's warnings attached), the
// creation time not compared for an event without a UID.
func TestAttachWarnings(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC))
	ev := func(vmi, migration, uid, reason string, at time.Time) corev1.Event {
		e := corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Annotations: settings.MigrationEventAnnotations(migration, types.UID(uid), nil)},
			InvolvedObject: corev1.ObjectReference{Kind: "VirtualMachineInstance", Name: vmi},
			Reason:         reason, LastTimestamp: metav1.NewTime(at),
			Message: settings.MigrationSubject(migration, types.UID(uid)) + " admitted with warnings:\nmigranet networkReady: " + uid + "\nmigranet feasibleTarget: two",
		}
		return e
	}
	mine := []string{"migranet networkReady: uid-1", "migranet feasibleTarget: two"}
	legacy := []string{"migranet networkReady: ", "migranet feasibleTarget: two"}
	for _, tc := range []struct {
		name  string
		event corev1.Event
		want  []string
	}{
		{"its own UID", ev("vm", "m", "uid-1", settings.ReasonMigrationWarned, created.Time), mine},
		{"its own UID, seen before the creation second (a clock skew: the UID decides)", ev("vm", "m", "uid-1", settings.ReasonMigrationWarned, created.Add(-time.Second)), mine},
		{"near miss: same name, another UID, seen later", ev("vm", "m", "uid-0", settings.ReasonMigrationWarned, created.Add(time.Minute)), nil},
		{"no UID, from the creation second", ev("vm", "m", "", settings.ReasonMigrationWarned, created.Time), legacy},
		{"near miss: no UID, one second older than the migration", ev("vm", "m", "", settings.ReasonMigrationWarned, created.Add(-time.Second)), nil},
		{"near miss: another VMI's", ev("other", "m", "uid-1", settings.ReasonMigrationWarned, created.Time), nil},
		{"near miss: another migration's", ev("vm", "m2", "uid-1", settings.ReasonMigrationWarned, created.Time), nil},
		{"near miss: another reason", ev("vm", "m", "uid-1", "SomethingElse", created.Time), nil},
	} {
		rows := []Row{{Namespace: "ns", Name: "m", VMI: "vm", Created: created, uid: "uid-1"}}
		AttachWarnings(rows, []corev1.Event{tc.event})
		if !reflect.DeepEqual(rows[0].AdmissionWarnings, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.name, rows[0].AdmissionWarnings, tc.want)
		}
	}
}

// TestAttachSteering: the steering's events on the migration itself, of its UID (without one, not
// older than it). Faults caught, each seen to fail once: another migration's event attached; an
// older one of the same name attached (by UID, by time); an event on the VMI taken for one on the
// migration.
func TestAttachSteering(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC))
	ev := func(kind, name, reason string, at time.Time) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
			Reason: reason, LastTimestamp: metav1.NewTime(at), Message: "target pod of migration " + name + " from node-1: excluded from the targets: node-2"}
	}
	rows := []Row{{Namespace: "ns", Name: "m1", VMI: "vm", Created: created, uid: "uid-1"}, {Namespace: "ns", Name: "m2", VMI: "vm", Created: created, uid: "uid-2"}}
	otherUID := ev("VirtualMachineInstanceMigration", "m2", settings.ReasonTargetSteered, created.Add(time.Minute)) // m2 of another UID, later
	otherUID.InvolvedObject.UID = "uid-0"
	AttachSteering(rows, []corev1.Event{
		otherUID,
		ev("VirtualMachineInstanceMigration", "m1", settings.ReasonTargetSteered, created.Time),
		ev("VirtualMachineInstanceMigration", "m2", settings.ReasonTargetSteered, created.Add(-time.Hour)), // an older m2
		ev("VirtualMachineInstance", "m2", settings.ReasonTargetSteered, created.Time),                     // not a migration
		ev("VirtualMachineInstanceMigration", "m2", settings.ReasonMigrationWarned, created.Time),
	})
	if len(rows[0].Steering) != 1 || rows[0].Steering[0] != "target pod of migration m1 from node-1: excluded from the targets: node-2" {
		t.Errorf("m1 steering %q", rows[0].Steering)
	}
	if rows[1].Steering != nil {
		t.Errorf("m2 got steering %q from events that are not its own", rows[1].Steering)
	}
}
