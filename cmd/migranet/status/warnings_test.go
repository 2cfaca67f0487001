package status

import (
	"reflect"
	"testing"
	"time"

	"github.com/migranet/migranet/settings"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAttachWarnings(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC))
	ev := func(vmi, migration, reason string, at time.Time) corev1.Event {
		return corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Annotations: map[string]string{settings.AnnotationMigration: migration}},
			InvolvedObject: corev1.ObjectReference{Kind: "VirtualMachineInstance", Name: vmi},
			Reason:         reason, LastTimestamp: metav1.NewTime(at),
			Message: "migration " + migration + " admitted with warnings:\nmigranet networkReady: one\nmigranet feasibleTarget: two",
		}
	}
	rows := []Row{{Namespace: "ns", Name: "m1", VMI: "vm", Created: created}, {Namespace: "ns", Name: "m2", VMI: "vm", Created: created}}
	AttachWarnings(rows, []corev1.Event{
		ev("vm", "m1", settings.ReasonMigrationWarned, created.Time),
		ev("vm", "m2", settings.ReasonMigrationWarned, created.Add(-time.Hour)), // an older m2
		ev("other", "m2", settings.ReasonMigrationWarned, created.Time),         // another VMI's
		ev("vm", "m2", "SomethingElse", created.Time),
	})
	if want := []string{"migranet networkReady: one", "migranet feasibleTarget: two"}; !reflect.DeepEqual(rows[0].AdmissionWarnings, want) {
		t.Errorf("m1 warnings %q, want %q", rows[0].AdmissionWarnings, want)
	}
	if rows[1].AdmissionWarnings != nil {
		t.Errorf("m2 got warnings %q from events that are not its own", rows[1].AdmissionWarnings)
	}
}

// TestAttachSteering: the steering's events on the migration itself, not older than it. Faults
// caught, each seen to fail once: another migration's event attached; an older one of the same
// name attached; an event on the VMI taken for one on the migration.
func TestAttachSteering(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC))
	ev := func(kind, name, reason string, at time.Time) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
			Reason: reason, LastTimestamp: metav1.NewTime(at), Message: "target pod of migration " + name + " from node-1: excluded from the targets: node-2"}
	}
	rows := []Row{{Namespace: "ns", Name: "m1", VMI: "vm", Created: created}, {Namespace: "ns", Name: "m2", VMI: "vm", Created: created}}
	AttachSteering(rows, []corev1.Event{
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
