package webhook

import (
	"context"

	"github.com/migranet/migranet/settings"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// recordWarnings leaves a Warning event on the VMI of a migration admitted with warnings, one
// line per warning, naming the migration and its UID (the API server fills the UID in before
// validating admission) in its annotations and first line (settings.MigrationSubject). Like
// recordRefusal it is asynchronous and records nothing for a dry run, without a VMI or without a
// recorder.
func (v *MigrationValidator) recordWarnings(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, warnings admission.Warnings) {
	if v.Recorder == nil || vmi == nil || len(warnings) == 0 || vmim.Name == "" {
		return
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil && *req.DryRun {
		return
	}
	msg := settings.MigrationSubject(vmim.Name, vmim.UID) + " admitted with warnings:"
	for _, w := range warnings {
		msg += "\n" + w
	}
	ref := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, ResourceVersion: vmi.ResourceVersion,
	}}
	v.Recorder.AnnotatedEventf(ref, settings.MigrationEventAnnotations(vmim.Name, vmim.UID, nil), corev1.EventTypeWarning,
		settings.ReasonMigrationWarned, "%s", truncate(msg, maxEventMessage))
}
