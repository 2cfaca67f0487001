package netcontroller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Ready and IPCapacity conditions.
const (
	ReasonReady            = "AllNodesAttached"
	ReasonPodNetwork       = "PodNetwork"
	ReasonNotApplied       = "NotApplied"
	ReasonNodesNotAttached = health.ReasonNodesNotAttached
	ReasonInvalidValue     = "InvalidValue"
	ReasonSufficient       = "Sufficient"
	ReasonLowCapacity      = "LowCapacity"
	// ReasonStatusWriteFailed is the Warning event recorded when the API server refuses or fails
	// the status write: the status then shows an earlier observation.
	ReasonStatusWriteFailed = statuswrite.ReasonWriteFailed
)

// Controller observes the migration network (see the package documentation).
type Controller struct {
	Client            client.Client
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	// APIReader reads whereabouts IPPools straight from the API server (they are not cached);
	// WhereaboutsNamespace is where whereabouts keeps them.
	APIReader            client.Reader
	WhereaboutsNamespace string
	// Metrics counts reconcile steps and exports the latest observation; nil records nothing.
	Metrics *Metrics
	// RangeSources name more ranges whose empty whereabouts pools the cleanup deletes once they
	// are not the current range, besides those migranet's NADs used (the setting's
	// status.ranges): another network's record of its own ranges (say, Harvester's migration
	// network's) plugs in here. Nil: migranet's own only.
	RangeSources []RangeSource

	addrs PodAddrs // the virt-handlers' addresses, from one observation to the next

	// cleaned is the hash whose stale pools were last cleaned, so the cleanup runs once per
	// applied value, after its rollout, and never on the hot path of node or pod events.
	cleaned atomic.Pointer[string]
	// quiet is the hash whose last cleanup pass deleted nothing while no virt-handler was rolling:
	// the next such pass, PoolCheckSpacing later, ends its cleanup (cleaned).
	quiet atomic.Pointer[string]
	// pool schedules the release of leaked allocations in the current range's pool (poolcheck.go).
	pool poolCheck
}

// RangeSource names ranges a network sharing whereabouts with migranet used: the empty pools of
// those ranges are that network's leftovers, never another's.
type RangeSource func(ctx context.Context) ([]netip.Prefix, error)

// SetupWithManager watches the setting, virt-handler pods, nodes and the KubeVirt CR; it runs on
// the leader only.
func (r *Controller) SetupWithManager(mgr ctrl.Manager) error {
	r.Metrics.init()
	return watchNetwork(ctrl.NewControllerManagedBy(mgr).Named("netcontroller"), r.KubeVirtNamespace).Complete(r)
}

// watchNetwork adds what an observation reads to b: the vm-migration-network setting, and
// virt-handler pods, nodes and the KubeVirt CR, each mapped to the setting.
func watchNetwork(b *builder.Builder, kubevirtNamespace string) *builder.Builder {
	toSetting := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == kubevirtNamespace })
	isHandler := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[settings.VirtHandlerLabel] == settings.VirtHandlerValue
	})
	return b.For(&v1beta1.Setting{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == v1beta1.MigrationNetwork
	}))).
		Watches(&corev1.Pod{}, toSetting, builder.WithPredicates(inNamespace, isHandler)).
		// An observation reads a node's name and labels only: its status updates (a kubelet's
		// heartbeat, every node every few seconds to minutes) each started one, a walk of every
		// node and virt-handler on every replica — at 1,000 nodes most of the manager's CPU
		// (make scale).
		Watches(&corev1.Node{}, toSetting, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&kubevirtv1.KubeVirt{}, toSetting, builder.WithPredicates(inNamespace))
}

// settingKey is the metadata of the vm-migration-network setting.
func settingKey() metav1.ObjectMeta { return metav1.ObjectMeta{Name: v1beta1.MigrationNetwork} }

// observeSetting reads, from the cache, what an observation needs and judges it.
func observeSetting(ctx context.Context, c client.Reader, kubevirtNamespace string, s *v1beta1.Setting, addrs *PodAddrs) (*health.Snapshot, Input, *settings.Network, Observation, error) {
	in, kv, eff, err := gather(ctx, c, kubevirtNamespace, s)
	in.Addr = addrs.Round()
	if err != nil {
		return nil, in, nil, Observation{}, err
	}
	obs := Observe(in)
	return judge(s, eff, kv, obs), in, eff.Network, obs, nil
}

// Reconcile observes and writes the network part of the status (the Observer, on every replica,
// publishes the same observation for admission).
func (r *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	snap, in, m, obs, err := observeSetting(ctx, r.Client, r.KubeVirtNamespace, s, &r.addrs)
	r.Metrics.step(StepObserve, err)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The pool is the leader's to read and mend: it releases leaked allocations and counts the
	// pool's in obs.Used (capacity only; readiness does not depend on it).
	requeue, poolErr := r.checkPool(ctx, m, in, &obs)
	conds, fields, capacity := statusOf(snap, m, obs)
	r.Metrics.observed(snap, capacity)
	r.recordTransitions(s, conds)
	err = statuswrite.ApplyStatus(ctx, r.Client, s, statuswrite.FieldManagerNetwork, conds, fields)
	r.Metrics.step(StepStatus, err)
	if err != nil {
		statuswrite.RecordWriteFailure(r.Recorder, s, statuswrite.FieldManagerNetwork, err)
		return reconcile.Result{}, err
	}
	again, cleanErr := r.cleanOnce(ctx, s, snap, in)
	return reconcile.Result{RequeueAfter: sooner(requeue, again)}, errors.Join(poolErr, cleanErr)
}

// sooner is the earlier of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// statusOf is the network part of the setting's status: the Ready condition, and IPCapacity with
// the capacity when a migration network is configured; the nodes and capacity fields.
func statusOf(snap *health.Snapshot, m *settings.Network, obs Observation) ([]metav1.Condition, map[string]any, *v1beta1.IPCapacity) {
	ready := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: snap.Reason, Message: snap.Message}
	switch {
	case snap.Reason == health.ReasonNetworkNotJudged:
		ready.Status = metav1.ConditionUnknown
	case snap.Ready:
		ready.Status = metav1.ConditionTrue
	}
	conds, fields := []metav1.Condition{ready}, map[string]any{"nodes": obs.Nodes, "capacity": nil}
	if len(obs.Nodes) == 0 {
		fields["nodes"] = nil
	}
	if m == nil {
		return conds, fields, nil
	}
	capCond, capacity := capacityOf(m, obs)
	conds, fields["capacity"] = append(conds, capCond), capacity
	return conds, fields, capacity
}

// cleanOnce deletes the whereabouts pools earlier ranges left (CleanPools) once per applied
// value, when the network is Ready: pools only gone virt-handlers hold, and empty pools of the
// ranges migranet's NADs used (the setting's status.ranges) or a RangeSources names. A pool
// written between the read and its delete is kept, and the pools are read again after
// PoolCheckSpacing; so they are after any delete: whereabouts creates a missing pool on demand,
// also for a CNI DEL still in flight, so the cleanup counts as done only after two passes in a
// row, PoolCheckSpacing apart, find nothing to delete and no virt-handler rolling.
func (r *Controller) cleanOnce(ctx context.Context, s *v1beta1.Setting, snap *health.Snapshot, in Input) (time.Duration, error) {
	// Done for a value only while that value stays in force: a value seen in between (applied or
	// not) may have left pools of its own, and coming back to the value cleaned before must look
	// again (seen in CI: A, then B for a few seconds, then A; B's pool was never deleted).
	if last := r.cleaned.Load(); last != nil && *last != snap.Hash {
		r.cleaned.Store(nil)
	}
	if r.APIReader == nil || !snap.Ready {
		return 0, nil
	}
	if last := r.cleaned.Load(); last != nil && *last == snap.Hash {
		return 0, nil
	}
	live := map[string]bool{}
	for _, p := range in.Pods {
		live[p.Namespace+"/"+p.Name] = true
	}
	ours := settings.RecordedRanges(s)
	for _, src := range r.RangeSources {
		more, err := src(ctx)
		if err != nil {
			r.Metrics.step(StepCleanup, err)
			return 0, err
		}
		ours = append(ours, more...)
	}
	deleted, conflicts, err := r.CleanPools(ctx, in.Range, ours, func(ns, name string) bool { return live[ns+"/"+name] })
	r.Metrics.step(StepCleanup, err)
	if err != nil {
		return 0, err
	}
	hash := snap.Hash
	// Ready does not wait for virt-handlers to leave a network given up for the pod network: their
	// addresses go back to the pools as they roll, and the emptied pools are deleted then (the pod
	// events bring the reconcile back; the requeue is the safety net).
	if deleted > 0 || conflicts > 0 || stillRolling(in) {
		r.quiet.Store(nil)
		return PoolCheckSpacing, nil
	}
	// Two quiet passes, PoolCheckSpacing apart: a CNI DEL still running as the last pod went
	// makes whereabouts create the pool it deleted from anew (empty), and the second pass sees it.
	if q := r.quiet.Load(); q == nil || *q != hash {
		r.quiet.Store(&hash)
		return PoolCheckSpacing, nil
	}
	r.cleaned.Store(&hash)
	return 0, nil
}

// stillRolling reports whether a virt-handler still holds a migration address outside the
// current range (any address, on the pod network): the rollout away from an earlier range has not
// ended, and its pool is not empty yet.
func stillRolling(in Input) bool {
	for _, p := range in.Pods {
		if ip, ok := in.addr(p); ok && (!in.Range.IsValid() || !in.Range.Contains(ip)) {
			return true
		}
	}
	return false
}

// gather reads, from the cache, what Observe needs.
func gather(ctx context.Context, c client.Reader, kubevirtNamespace string, s *v1beta1.Setting) (Input, *kubevirtv1.KubeVirt, settings.Effective, error) {
	in := Input{Namespace: kubevirtNamespace}
	eff := settings.EffectiveNetwork(s)
	m := eff.Network
	if m != nil {
		in.Network = eff.NAD
		in.Range = m.Range
		in.ClusterNetwork = m.ClusterNetwork
	}
	nodes := &corev1.NodeList{}
	// Read-only from here on: no deep copy of every node and pod per reconcile.
	if err := c.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, eff, err
	}
	for i := range nodes.Items {
		in.Nodes = append(in.Nodes, &nodes.Items[i])
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}, client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, eff, err
	}
	for i := range pods.Items {
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	kv, err := clusterread.KubeVirtCR(ctx, c, kubevirtNamespace)
	if err != nil {
		return in, nil, eff, err
	}
	in.NodeSelector = settings.WorkloadsNodeSelector(kv)
	return in, kv, eff, nil
}

// judge turns an observation into the snapshot and the Ready condition's reason and message.
func judge(s *v1beta1.Setting, eff settings.Effective, kv *kubevirtv1.KubeVirt, obs Observation) *health.Snapshot {
	m := eff.Network
	snap := &health.Snapshot{Configured: m != nil, AppliedHash: s.Status.AppliedHash, Eligible: obs.Eligible, Attached: obs.Attached}
	if m != nil {
		snap.Hash, snap.Network, snap.ClusterNetwork = eff.Hash, eff.NAD, m.ClusterNetwork
		for _, n := range obs.Nodes {
			if n.Reason != "" {
				if snap.NotAttached == nil {
					snap.NotAttached = map[string]string{}
				}
				snap.NotAttached[n.Name] = n.Reason
			}
		}
	}
	kvReady, kvWhy := settings.KubeVirtReady(kv)
	switch {
	case eff.NotJudged != nil:
		snap.Ready, snap.Reason = true, health.ReasonNetworkNotJudged
		snap.Message = "KubeVirt migrates over " + eff.NotJudged.Describe()
	case m == nil && len(eff.Errs) > 0:
		snap.Reason, snap.Message = ReasonInvalidValue, "the setting's value is invalid (condition Configured names every problem); fix it with kubectl edit"
	case m != nil && snap.AppliedHash != snap.Hash:
		snap.Reason, snap.Message = ReasonNotApplied, "the settings controller has not applied the current value yet (see condition Configured)"
	case m != nil && obs.Attached < obs.Eligible:
		snap.Reason = ReasonNodesNotAttached
		snap.Message = fmt.Sprintf("%d of %d virt-handlers are on the migration network %s", obs.Attached, obs.Eligible, snap.Network)
	case !kvReady:
		snap.Reason, snap.Message = health.ReasonKubeVirtNotReady, kvWhy
	case m == nil:
		snap.Ready, snap.Reason, snap.Message = true, ReasonPodNetwork, "no migration network configured: migrations use the pod network"
	default:
		snap.Ready, snap.Reason = true, ReasonReady
		snap.Message = fmt.Sprintf("all %d eligible virt-handlers are on the migration network %s", obs.Eligible, snap.Network)
	}
	return snap
}

// recordTransitions emits one event per condition whose status or reason changes: a rollout
// starting (Ready False, NotApplied or NodesNotAttached) and ending (Ready True), KubeVirt or the
// value going wrong, capacity turning low and recovering. Progress within a rollout ("2 of 3")
// changes only the message and emits nothing.
func (r *Controller) recordTransitions(s *v1beta1.Setting, conds []metav1.Condition) {
	for _, c := range conds {
		if statuswrite.ConditionChanged(s.Status.Conditions, c) {
			r.Recorder.Event(s, eventType(c), c.Reason, c.Message)
		}
	}
}

// eventType is Normal for healthy conditions and for a rollout in progress, else Warning.
func eventType(c metav1.Condition) string {
	if c.Status == metav1.ConditionTrue || c.Reason == ReasonNotApplied || c.Reason == ReasonNodesNotAttached || c.Reason == health.ReasonNetworkNotJudged {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}
