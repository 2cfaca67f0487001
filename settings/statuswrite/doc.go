// Package statuswrite is how migranet's controllers write a Setting's status: ApplyStatus applies one
// writer's conditions and fields by server-side apply under its own field manager (FieldManager*),
// so the settings controller, the network controller and the offender scan never overwrite each
// other. A write that fails is a Warning event on the Setting (RecordWriteFailure). It also
// holds the reconcile-step counter both controllers share (Metrics) and RegisterOrReuse, which
// every metrics constructor registers with.
package statuswrite
