package settings

// The events migranet's admission leaves on KubeVirt objects, named here because they are read as
// much as written: `kubectl describe` shows them, `migranet status` finds them by these names, and
// the webhook records them.
const (
	// ReasonMigrationRefused is the reason of the Warning event a refused migration leaves on its
	// VMI.
	ReasonMigrationRefused = "MigrationRefused"
	// ReasonMigrationWarned is the reason of the Warning event a migration admitted with warnings
	// (rules in warn mode) leaves on its VMI; AnnotationMigration on that event names the
	// migration. A validating webhook cannot annotate the object it admits, and the migration does
	// not exist yet when it is judged: the event on the VMI, written by the replica that judged it
	// from the very decisions it answered with, is where the warnings are found later.
	ReasonMigrationWarned = "MigrationAdmittedWithWarnings"
	AnnotationMigration   = "migranet.io/migration"
	// ReasonTargetSteered is the event on a migration whose target pod was kept off nodes, or
	// steered towards verified paths.
	ReasonTargetSteered = "TargetSteered"
	// ReasonNoTargetLeft is the Warning event on a migration whose target pod has no node left; it
	// stays Pending until KubeVirt fails the migration.
	ReasonNoTargetLeft = "NoMigrationTargetLeft"
)
