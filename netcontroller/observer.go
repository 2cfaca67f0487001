package netcontroller

import (
	"context"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Observer publishes the readiness snapshot admission reads. Every replica runs it, leader or
// not, from its own informers: the observation is pure and cheap, and a replica that waited for
// the leader's status (or ran the observation only when leading) would judge migrations
// differently from its peers. It writes nothing to the API server; Controller, on the leader
// only, turns the same observation into status, events and gauges.
type Observer struct {
	Client            client.Client
	KubeVirtNamespace string
	// Snapshots receives every observation.
	Snapshots *health.Store

	addrs PodAddrs // the virt-handlers' addresses, from one observation to the next
}

// SetupWithManager runs the observer on every replica (no leader election), with one observation
// queued at start, so that a cluster without the setting or without nodes is observed too.
func (o *Observer) SetupWithManager(mgr ctrl.Manager) error {
	first := make(chan event.GenericEvent, 1)
	first <- event.GenericEvent{Object: &v1beta1.Setting{ObjectMeta: settingKey()}}
	b := ctrl.NewControllerManagedBy(mgr).Named("netobserver").
		WithOptions(controller.Options{NeedLeaderElection: ptr(false)}).
		WatchesRawSource(source.Channel(first, &handler.EnqueueRequestForObject{}))
	return watchNetwork(b, o.KubeVirtNamespace).Complete(o)
}

// Reconcile observes and publishes; a missing setting is observed as "no migration network".
func (o *Observer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := o.Client.Get(ctx, req.NamespacedName, s); apierrors.IsNotFound(err) {
		s = &v1beta1.Setting{ObjectMeta: settingKey()}
	} else if err != nil {
		return reconcile.Result{}, err
	}
	snap, _, _, _, err := observeSetting(ctx, o.Client, o.KubeVirtNamespace, s, &o.addrs)
	if err != nil {
		return reconcile.Result{}, err
	}
	o.Snapshots.Publish(snap)
	return reconcile.Result{}, nil
}

// ObservedCheck is a readiness check: it passes once the first observation is published, so a
// replica that has just started is sent no admission traffic before it can judge networkReady.
func (o *Observer) ObservedCheck(*http.Request) error {
	if o.Snapshots.Load() == nil {
		return errors.New("the migration network has not been observed yet: admission would refuse migrations as not ready")
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
