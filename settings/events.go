package settings

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The events migranet's admission leaves on KubeVirt objects, named here because they are read as
// much as written: `kubectl describe` shows them, `migranet status` finds them by these names, and
// the webhook records them.
const (
	// ReasonMigrationRefused is the reason of the Warning event a refused migration leaves on its
	// VMI; AnnotationMigration names the migration. A refused migration is never stored, so it has
	// no UID: its story is tied to it by time (an older refusal is an earlier attempt's).
	ReasonMigrationRefused = "MigrationRefused"
	// ReasonMigrationWarned is the reason of the Warning event a migration admitted with warnings
	// (rules in warn mode) leaves on its VMI; AnnotationMigration and AnnotationMigrationUID on that
	// event name the migration. A validating webhook cannot annotate the object it admits, and the
	// migration does not exist yet when it is judged (its UID does: the API server fills it in
	// before validating admission): the event on the VMI, written by the replica that judged it
	// from the very decisions it answered with, is where the warnings are found later.
	ReasonMigrationWarned = "MigrationAdmittedWithWarnings"
	// ReasonTargetSteered is the event on a migration whose target pod was kept off nodes, or
	// steered towards verified paths.
	ReasonTargetSteered = "TargetSteered"
	// ReasonNoTargetLeft is the Warning event on a migration whose target pod has no node left; it
	// stays Pending until KubeVirt fails the migration.
	ReasonNoTargetLeft = "NoMigrationTargetLeft"
)

// The annotations of the events migranet leaves on a VMI about one of its migrations (an event on
// the migration itself names it by its involvedObject, UID included). They tie each event to one
// migration: a later migration of the same name has another UID and inherits nothing.
const (
	// AnnotationMigration names the migration.
	AnnotationMigration = "migranet.io/migration"
	// AnnotationMigrationUID is the migration's UID (none on a refusal: it was never stored).
	AnnotationMigrationUID = "migranet.io/migration-uid"
	// AnnotationMigrationState is the migration's state when migranet judged it (a JSON
	// status.migrationState trimmed to what a story tells: nodes, start, target address, mode,
	// network), on the path-abort controller's events. The VMI's status.migrationState holds only
	// its latest migration and an aborted migration's VMIM is gone once KubeVirt releases it, so
	// this is what keeps an aborted migration's story once its VMI has moved on, for as long as
	// events live (kube-apiserver's --event-ttl, an hour by default).
	AnnotationMigrationState = "migranet.io/migration-state"
)

// MigrationSubject is how an event on a VMI names one of its migrations: "migration NAME (uid
// UID)", without the UID when there is none. The UID is in the message, not only in the
// annotations, because an event recorder folds an event into an earlier one of the same object,
// reason and message (counting it, keeping the first one's annotations): two migrations' events
// must never read alike.
func MigrationSubject(name string, uid types.UID) string {
	if uid == "" {
		return "migration " + name
	}
	return "migration " + name + " (uid " + string(uid) + ")"
}

// MigrationEventAnnotations are the annotations of an event on a VMI about migration name with
// uid; ms, when given, is recorded trimmed (AnnotationMigrationState).
func MigrationEventAnnotations(name string, uid types.UID, ms *kubevirtv1.VirtualMachineInstanceMigrationState) map[string]string {
	out := map[string]string{AnnotationMigration: name}
	if uid != "" {
		out[AnnotationMigrationUID] = string(uid)
	}
	if ms != nil {
		rec := kubevirtv1.VirtualMachineInstanceMigrationState{
			MigrationUID: uid, SourceNode: ms.SourceNode, TargetNode: ms.TargetNode, StartTimestamp: ms.StartTimestamp,
			TargetNodeAddress: ms.TargetNodeAddress, Mode: ms.Mode, MigrationNetworkType: ms.MigrationNetworkType,
			VMIMConfigurationOptions: ms.VMIMConfigurationOptions,
		}
		if b, err := json.Marshal(rec); err == nil {
			out[AnnotationMigrationState] = string(b)
		}
	}
	return out
}

// RecordedMigrationState is the migration state an event's annotations recorded
// (AnnotationMigrationState), nil when there is none or it does not decode.
func RecordedMigrationState(annotations map[string]string) *kubevirtv1.VirtualMachineInstanceMigrationState {
	raw := annotations[AnnotationMigrationState]
	if raw == "" {
		return nil
	}
	ms := &kubevirtv1.VirtualMachineInstanceMigrationState{}
	if json.Unmarshal([]byte(raw), ms) != nil {
		return nil
	}
	return ms
}
