package migrationcheck

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

var vmimKind = kubevirtv1.SchemeGroupVersion.WithKind("VirtualMachineInstanceMigration").GroupKind()

// Text is the decision as the user reads it, in a refusal, a warning or a preflight:
// "migranet <rule>: <message>", bounded.
func (d Decision) Text() string {
	return settings.ShortenMessage("migranet " + string(d.Rule) + ": " + d.Message)
}

// Answer turns decisions into admission warnings and, when any rule denies, a refusal: 422
// Invalid with one cause per rule for a create, 403 Forbidden for a cancel.
func Answer(vmim *kubevirtv1.VirtualMachineInstanceMigration, ds []Decision, cancel bool) ([]string, error) {
	var warnings []string
	var errs field.ErrorList
	for _, d := range ds {
		switch {
		case d.Deny:
			path := d.Field
			if path == "" {
				path = fieldVMIName
			}
			errs = append(errs, field.Forbidden(field.NewPath(path), d.Text()))
		case d.Warn:
			warnings = append(warnings, d.Text())
		}
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	if cancel {
		return warnings, apierrors.NewForbidden(kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations").GroupResource(),
			settings.ShortenName(vmim.Name), errs.ToAggregate())
	}
	return warnings, apierrors.NewInvalid(vmimKind, settings.ShortenName(vmim.Name), errs)
}
