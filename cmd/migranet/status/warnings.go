package status

import (
	"strings"
	"time"

	"github.com/migranet/migranet/settings"
	corev1 "k8s.io/api/core/v1"
)

// AttachWarnings sets each row's AdmissionWarnings from the MigrationAdmittedWithWarnings events
// migranet's webhook left on the VMIs: an event counts for a row when it is on the row's VMI and
// names the row's migration by name and UID (namesMigration: an event without a UID, when last
// seen no earlier than the migration's creation second), so that an older migration of the same
// name lends it nothing.
func AttachWarnings(rows []Row, events []corev1.Event) {
	for i := range rows {
		r := &rows[i]
		for _, e := range events {
			if e.Reason != settings.ReasonMigrationWarned || e.Namespace != r.Namespace || e.InvolvedObject.Kind != kindVMI ||
				e.InvolvedObject.Name != r.VMI || !namesMigration(e, r.Name, r.uid, r.Created.Time) {
				continue
			}
			lines := strings.Split(e.Message, "\n")
			r.AdmissionWarnings = append(r.AdmissionWarnings, lines[1:]...)
		}
	}
}

// AttachSteering sets each row's Steering from the events the target pod steering left on the
// migration itself (TargetSteered, NoMigrationTargetLeft): of its UID (onMigration: without one,
// seen no earlier than its creation).
func AttachSteering(rows []Row, events []corev1.Event) {
	for i := range rows {
		r := &rows[i]
		for _, e := range events {
			if (e.Reason != settings.ReasonTargetSteered && e.Reason != settings.ReasonNoTargetLeft) || e.Namespace != r.Namespace ||
				!onMigration(e, r.Name, r.uid, r.Created.Time) {
				continue
			}
			r.Steering = append(r.Steering, e.Message)
		}
	}
}

// eventTime is when the event was last seen.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}
