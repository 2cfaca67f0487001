package webhook

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/slots"
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
	// Slots holds the inbound slot reservations rule inboundSlot judges with and writes; nil
	// judges with this replica's cache alone.
	Slots *slots.Store
}

// ValidateCreate refuses a migration that cannot succeed.
func (v *MigrationValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	vmim, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("expected a VirtualMachineInstanceMigration, got %T", obj)), nil
	}
	var user string
	dryRun := false
	if req, err := admission.RequestFromContext(ctx); err == nil {
		user = req.UserInfo.Username
		dryRun = req.DryRun != nil && *req.DryRun
	}
	in, err := migrationcheck.GatherCreate(ctx, v.State, vmim, user)
	if err != nil {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("reading the cache: %w", err)), nil
	}
	var ds []migrationcheck.Decision
	var slotWarning string
	if v.Slots != nil && migrationcheck.JudgesSlots(in) {
		ds, slotWarning = v.evaluateWithSlot(ctx, in, dryRun)
	} else {
		ds = migrationcheck.EvaluateCreate(*in)
	}
	v.Metrics.decided(WebhookVMIMCreate, ds)
	warnings, err := migrationcheck.Answer(vmim, ds, false)
	if slotWarning != "" && err == nil {
		warnings = append(warnings, slotWarning)
	}
	if err != nil {
		v.recordRefusal(ctx, in.VMI, vmim, ds)
	} else {
		v.recordWarnings(ctx, in.VMI, vmim, warnings)
	}
	return warnings, err
}

// evaluateWithSlot judges in with the inbound slot reservations (those of migrations the traffic's
// count does not hold and the cache does not show finished wait for a slot) and, when the migration is admitted and this is no
// dry run, reserves its slot; a write that conflicts with another replica's judges again. When the
// reservations cannot be read or written the migration is judged with this replica's cache alone,
// and a warning says so.
func (v *MigrationValidator) evaluateWithSlot(ctx context.Context, in *migrationcheck.CreateInput, dryRun bool) ([]migrationcheck.Decision, string) {
	var ds []migrationcheck.Decision
	r := slots.Reservation{UID: in.VMIM.UID, Namespace: in.VMIM.Namespace, VMI: in.VMIM.Spec.VMIName}
	_, err := v.Slots.Reserve(ctx, r, func(live []slots.Reservation) bool {
		in.Reserved = unfinishedReservations(ctx, v.State, live)
		ds = migrationcheck.EvaluateCreate(*in)
		return !dryRun && r.UID != "" && !refused(ds)
	})
	if err == nil {
		return ds, ""
	}
	in.Reserved = nil
	return migrationcheck.EvaluateCreate(*in), "migranet inboundSlot: judged without the other replicas' reservations (" + err.Error() +
		"): a migration admitted at the same moment by another replica may take the same slot"
}

// unfinishedReservations is the UIDs of the reservations whose VMIM st's cache does not show
// finished (Succeeded or Failed): a finished migration holds no slot, whatever its reservation
// says; the others wait for one unless the traffic's count already holds them (migrationcheck).
func unfinishedReservations(ctx context.Context, st migrationcheck.State, live []slots.Reservation) []types.UID {
	var out []types.UID
	for _, r := range live {
		ms, err := st.MigrationsOf(ctx, r.Namespace, r.VMI)
		if err == nil && slices.ContainsFunc(ms, func(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
			return m.UID == r.UID && !migrationcheck.Unfinished(m)
		}) {
			continue
		}
		out = append(out, r.UID)
	}
	return out
}

func refused(ds []migrationcheck.Decision) bool {
	return slices.ContainsFunc(ds, func(d migrationcheck.Decision) bool { return d.Deny })
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
