package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// PolicyController writes the migration-policy setting's status.summary (its VALUE in
// `kubectl get settings.migranet.io`): the policy's Summary, or "invalid" when the effective
// value does not parse (admission refuses such values; only a bypass stores one).
type PolicyController struct {
	Client client.Client
}

// SetupWithManager watches the migration-policy setting (leader only, like every writer).
func (r *PolicyController) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("policy").
		For(&v1beta1.Setting{}, builder.WithPredicates(named(v1beta1.MigrationPolicy), predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reconcile writes the summary when it differs from the stored one.
func (r *PolicyController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, statuswrite.ApplyStatus(ctx, r.Client, s, statuswrite.FieldManagerPolicy, nil, map[string]any{"summary": settings.PolicySummary(s)})
}
