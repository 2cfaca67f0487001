package netcontroller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// PathObserver publishes the probe agents' path health admission reads (rule pathHealthy): on
// every replica, from its own informer of PathReports, settings.Paths of the migration network
// the readiness snapshot names (PathReports name it namespace/name, the snapshot by name in the
// KubeVirt namespace).
//
// It is the minimal publisher the admission side needs to run on its own, and is meant to be
// replaced by the path controller of issue #32 (which also writes the Setting's Healthy condition
// and status.paths): keep its contract — Paths receives a new *settings.PathHealth after every
// change of the reports, and again when the snapshot's network changes — and delete this file.
type PathObserver struct {
	Client            client.Client
	KubeVirtNamespace string
	// Snapshots is the readiness the network observer publishes: its Network is the NAD judged.
	Snapshots *settings.Store
	// Paths receives every rebuilt health.
	Paths *settings.PathStore
}

// pathsResync is how often the health is rebuilt without a report changing, so that a new
// network in the snapshot (published by another controller) is picked up.
const pathsResync = 10 * time.Second

// SetupWithManager runs the observer on every replica; every PathReport event queues the one
// rebuild.
func (o *PathObserver) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "paths"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("pathobserver").
		WithOptions(controller.Options{NeedLeaderElection: ptr(false)}).
		Watches(&v1beta1.PathReport{}, one).
		Complete(o)
}

// Reconcile rebuilds the health from the cached reports; without a migration network it
// publishes nil (nothing to judge).
func (o *PathObserver) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap := o.Snapshots.Load()
	if snap == nil || snap.Network == "" {
		o.Paths.Publish(nil)
		return reconcile.Result{RequeueAfter: pathsResync}, nil
	}
	list := &v1beta1.PathReportList{}
	if err := o.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, err
	}
	reports := make([]*v1beta1.PathReport, len(list.Items))
	for i := range list.Items {
		reports[i] = &list.Items[i]
	}
	o.Paths.Publish(settings.Paths(settings.PathNetwork(o.KubeVirtNamespace, snap.Network), reports))
	return reconcile.Result{RequeueAfter: pathsResync}, nil
}
