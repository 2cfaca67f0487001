package netcontroller

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// PathObserver publishes the migration paths' health (health.PathHealth) from the probe agents'
// PathReports, for admission and for the path status writer. Like Observer, every replica runs
// it from its own informers and it writes nothing. It rebuilds the health on any change of a
// report or of the current network, coalesced on the setting's key: at 1,000 nodes reporting every
// 20 s that is one rebuild per burst of report events, each a walk of the cached reports.
type PathObserver struct {
	Client            client.Client
	KubeVirtNamespace string
	// Paths receives every rebuilt health.
	Paths *health.PathStore
	// Changed, when set, is sent an event (never blocking) after each publish: the path status
	// writer's trigger, so it reads a health at least as new as the event. Buffer it.
	Changed chan event.GenericEvent
	// Published, when set, is sent an event (never blocking) after each publish too: the
	// path-abort controller's trigger. Buffer it.
	Published chan event.GenericEvent

	// longest is the longest last round, in nanoseconds, of the current network's reports.
	longest atomic.Int64
}

// SetupWithManager runs the observer on every replica (no leader election), with one observation
// queued at start, so that a cluster without reports is observed too.
func (o *PathObserver) SetupWithManager(mgr ctrl.Manager) error {
	first := make(chan event.GenericEvent, 1)
	first <- event.GenericEvent{Object: &v1beta1.Setting{ObjectMeta: settingKey()}}
	toSetting := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("pathobserver").
		WithOptions(controller.Options{NeedLeaderElection: ptr(false)}).
		For(&v1beta1.Setting{}, builder.WithPredicates(isMigrationNetwork, valueChanged)).
		Watches(&v1beta1.PathReport{}, toSetting).
		// A virt-handler pod created or deleted: reports of a replaced pod stop judging.
		Watches(&corev1.Pod{}, toSetting, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return e.ObjectNew.GetUID() != e.ObjectOld.GetUID() },
		})).
		WatchesRawSource(source.Channel(first, &handler.EnqueueRequestForObject{})).
		Complete(o)
}

// isMigrationNetwork passes the vm-migration-network setting only.
var isMigrationNetwork = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == v1beta1.MigrationNetwork })

// valueChanged passes updates that change the network in force (value or default, or in Harvester
// mode the mirrored source), not the other status writes every controller makes.
var valueChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, oldOK := e.ObjectOld.(*v1beta1.Setting)
	cur, curOK := e.ObjectNew.(*v1beta1.Setting)
	return !oldOK || !curOK || settings.EffectiveValue(old) != settings.EffectiveValue(cur) ||
		!equality.Semantic.DeepEqual(old.Status.Source, cur.Status.Source)
}}

// Reconcile rebuilds and publishes the health of the current network; a missing setting is no
// migration network.
func (o *PathObserver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := o.Client.Get(ctx, req.NamespacedName, s); apierrors.IsNotFound(err) {
		s = &v1beta1.Setting{ObjectMeta: settingKey()}
	} else if err != nil {
		return reconcile.Result{}, err
	}
	network := o.Network(s)
	list := &v1beta1.PathReportList{}
	// Read-only: no deep copy of every report per rebuild.
	if err := o.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	reports := make([]*v1beta1.PathReport, len(list.Items))
	for i := range list.Items {
		reports[i] = &list.Items[i]
	}
	pods := &corev1.PodList{}
	if err := o.Client.List(ctx, pods, client.InNamespace(o.KubeVirtNamespace),
		client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	handlers := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		handlers[i] = &pods.Items[i]
	}
	reports = health.CurrentReports(reports, health.VirtHandlerUIDs(handlers))
	o.longest.Store(int64(LongestRound(network, reports)))
	o.Paths.Publish(health.Paths(network, reports))
	for _, ch := range []chan event.GenericEvent{o.Changed, o.Published} {
		if ch == nil {
			continue
		}
		select {
		case ch <- event.GenericEvent{Object: &v1beta1.Setting{ObjectMeta: settingKey()}}:
		default: // an event is pending already: the reconcile it starts reads this health or a newer one
		}
	}
	return reconcile.Result{}, nil
}

// Network is the network s's reports must name: its NAD as namespace/name, "" when it asks for
// none. It is derived as the readiness snapshot's Network is (settings.EffectiveNetwork), from the
// same Setting, so the health never lags a network change behind the snapshot.
func (o *PathObserver) Network(s *v1beta1.Setting) string {
	return settings.NADRef(o.KubeVirtNamespace, settings.EffectiveNetwork(s).NAD)
}

// LongestRound is the longest last round (completed - started) over the reports of network.
func LongestRound(network string, reports []*v1beta1.PathReport) time.Duration {
	var longest time.Duration
	for _, r := range reports {
		if r.Network != network || r.LastRound == nil {
			continue
		}
		longest = max(longest, r.LastRound.Completed.Sub(r.LastRound.Started.Time))
	}
	return longest
}

// LongestRound is the longest last round of the current network's reports at the last rebuild;
// 0 for a nil observer.
func (o *PathObserver) LongestRound() time.Duration {
	if o == nil {
		return 0
	}
	return time.Duration(o.longest.Load())
}

// PathReportCache is the cache entry for PathReports: every report (one per node), trimmed to what
// the health and the round gauge read. The manager adds it to its cache options.
func PathReportCache() cache.ByObject { return cache.ByObject{Transform: TrimPathReport} }

// TrimPathReport drops from a cached PathReport what nothing reads: labels, annotations, owners,
// managed fields, the agent's version, address and port, the round's RTTs and each failing peer's
// address and message (health.Paths words its own message); a failing peer's start stays (the
// abort rule dates a failure by it).
func TrimPathReport(obj any) (any, error) {
	r, ok := obj.(*v1beta1.PathReport)
	if !ok {
		return obj, nil
	}
	r.ObjectMeta = metav1.ObjectMeta{Name: r.Name, ResourceVersion: r.ResourceVersion, UID: r.UID,
		Generation: r.Generation, CreationTimestamp: r.CreationTimestamp, DeletionTimestamp: r.DeletionTimestamp}
	r.AgentVersion, r.Address, r.Port = "", "", 0
	if r.LastRound != nil {
		r.LastRound = &v1beta1.ProbeRound{Started: r.LastRound.Started, Completed: r.LastRound.Completed,
			Peers: r.LastRound.Peers, Failing: r.LastRound.Failing}
	}
	for i := range r.Failing {
		r.Failing[i] = v1beta1.PeerPath{Node: r.Failing[i].Node, Reason: r.Failing[i].Reason, Largest: r.Failing[i].Largest, Since: r.Failing[i].Since,
			AfterCheck: r.Failing[i].AfterCheck}
	}
	return r, nil
}
