package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ReasonMigrationWarned is the reason of the Warning event a migration admitted with warnings
// (rules in warn mode) leaves on its VMI; AnnotationMigration on that event names the migration.
// A validating webhook cannot annotate the object it admits, and the migration does not exist yet
// when it is judged: the event on the VMI, written by the replica that judged it from the very
// decisions it answered with, is where `kubectl describe vmi` and `migranet status` find them.
const (
	ReasonMigrationWarned = "MigrationAdmittedWithWarnings"
	AnnotationMigration   = "migranet.io/migration"
)

// recordWarnings leaves a Warning event on the VMI of a migration admitted with warnings, one
// line per warning, annotated with the migration's name. Like recordRefusal it is asynchronous
// and records nothing for a dry run, without a VMI or without a recorder.
func (v *MigrationValidator) recordWarnings(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, warnings admission.Warnings) {
	if v.Recorder == nil || vmi == nil || len(warnings) == 0 || vmim.Name == "" {
		return
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil && *req.DryRun {
		return
	}
	msg := "migration " + vmim.Name + " admitted with warnings:"
	for _, w := range warnings {
		msg += "\n" + w
	}
	ref := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, ResourceVersion: vmi.ResourceVersion,
	}}
	v.Recorder.AnnotatedEventf(ref, map[string]string{AnnotationMigration: vmim.Name}, corev1.EventTypeWarning, ReasonMigrationWarned, "%s", truncate(msg, maxEventMessage))
}
