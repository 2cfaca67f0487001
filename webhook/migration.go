package webhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/webhook/migrationcheck"
)

// +kubebuilder:webhook:path=/validate-kubevirt-io-v1-virtualmachineinstancemigration,mutating=false,failurePolicy=ignore,sideEffects=NoneOnDryRun,groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=create;delete,versions=v1,name=vmim.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// MigrationValidator admits VirtualMachineInstanceMigration create (the create rules of
// migrationcheck.EvaluateCreate) and delete, which cancels a migration (EvaluateDelete). It reads
// only State: the manager fills it from informer stores.
type MigrationValidator struct {
	State migrationcheck.State
	// Metrics counts the decisions; nil counts nothing.
	Metrics *Metrics
	// Recorder receives a Warning event on the VMI of each refused migration; nil records none.
	Recorder record.EventRecorder
}

// ValidateCreate refuses a migration that cannot succeed.
func (v *MigrationValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	vmim, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("expected a VirtualMachineInstanceMigration, got %T", obj)), nil
	}
	var user string
	if req, err := admission.RequestFromContext(ctx); err == nil {
		user = req.UserInfo.Username
	}
	in, err := migrationcheck.GatherCreate(ctx, v.State, vmim, user)
	if err != nil {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("reading the cache: %w", err)), nil
	}
	ds := migrationcheck.EvaluateCreate(*in)
	v.Metrics.decided(WebhookVMIMCreate, ds)
	warnings, err := migrationcheck.Answer(vmim, ds, false)
	if err != nil {
		v.recordRefusal(ctx, in.VMI, vmim, ds)
	} else {
		v.recordWarnings(ctx, in.VMI, vmim, warnings)
	}
	return warnings, err
}

// ValidateUpdate admits every update: the rules are about starting and cancelling migrations.
func (v *MigrationValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete refuses cancelling a migration in post-copy, unless forced.
func (v *MigrationValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	vmim, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok {
		return v.Metrics.notJudged(WebhookVMIMDelete, fmt.Errorf("expected a VirtualMachineInstanceMigration, got %T", obj)), nil
	}
	in, err := migrationcheck.GatherDelete(ctx, v.State, vmim)
	if err != nil {
		return v.Metrics.notJudged(WebhookVMIMDelete, fmt.Errorf("reading the cache: %w", err)), nil
	}
	ds := migrationcheck.EvaluateDelete(*in)
	v.Metrics.decided(WebhookVMIMDelete, ds)
	return migrationcheck.Answer(vmim, ds, true)
}
