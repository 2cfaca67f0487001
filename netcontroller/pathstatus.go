package netcontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Healthy condition (and of its events).
const (
	// ReasonPathsVerified: every pair of attached nodes has a verified path (True).
	ReasonPathsVerified = "AllPathsVerified"
	// ReasonPathsFailing: a fresh report says a path between two attached nodes fails (False).
	ReasonPathsFailing = "PathsFailing"
	// ReasonPathsUnverified: some pairs are unverified (a new node, an agent down or stale), none
	// fails (Unknown).
	ReasonPathsUnverified = "PathsUnverified"
	// ReasonNotProbed: no attached node has fresh probe results (no agent runs, or none has
	// probed the current network yet), or fewer than two nodes are attached (Unknown).
	ReasonNotProbed = "NotProbed"
	// ReasonPathsHealthy is the Normal event recorded when Healthy turns True.
	ReasonPathsHealthy = "PathsHealthy"
	// ReasonAgentSilent: no path fails, but the probe agent of an attached node has finished no
	// round within its bound (False); also the Warning event naming each node whose agent falls
	// silent.
	ReasonAgentSilent = health.ReasonAgentSilent
)

// Steps of the path status writer, counted in statuswrite.MetricReconcileSteps.
const (
	PathsControllerName = "paths"
	// StepPathsStatus writes Healthy and status.paths.
	StepPathsStatus = "status"
)

// DefaultPathsWriteInterval spaces out writes that change only counts or messages, not the
// Healthy condition's status or reason (those are written at once).
const DefaultPathsWriteInterval = 10 * time.Second

// worstNodes is how many of the nodes with the most failing paths the Healthy message names.
const worstNodes = 3

// PathStatus is the leader's path status writer: it owns the vm-migration-network Setting's
// Healthy condition and status.paths (field manager statuswrite.FieldManagerPaths), from the health the
// PathObserver publishes and the attached nodes in status.nodes (so no node or pod is listed per
// report event). It records an event when Healthy changes status or reason and exports the path
// gauges.
//
// Write volume: reconciles coalesce on the setting's key; nothing is written when the status is
// unchanged; a change of counts only (a new node being verified by one peer after another, at
// 1,000 nodes up to one change per report) is written at most once per WriteInterval, while a
// transition of Healthy is written at once. Each write also wakes the network controller.
type PathStatus struct {
	Client            client.Client
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	// Paths is the store the PathObserver publishes into; Observer gives the longest round.
	Paths    *health.PathStore
	Observer *PathObserver
	// Changed is the PathObserver's Changed channel: an event after each publish.
	Changed chan event.GenericEvent
	// Metrics exports the path gauges and counts the status step; nil records nothing.
	Metrics *Metrics
	// WriteInterval spaces out writes that are not transitions (0: DefaultPathsWriteInterval).
	WriteInterval time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu        sync.Mutex
	lastWrite time.Time
	// silent are the nodes whose silence an event has told (forgotten once they report again).
	silent map[string]bool
}

// SetupWithManager runs the writer on the leader, on changes of the setting and after each
// publish of the PathObserver.
func (r *PathStatus) SetupWithManager(mgr ctrl.Manager) error {
	r.Metrics.initPaths()
	b := ctrl.NewControllerManagedBy(mgr).Named("pathstatus").
		For(&v1beta1.Setting{}, builder.WithPredicates(isMigrationNetwork))
	if r.Changed != nil {
		b = b.WatchesRawSource(source.Channel(r.Changed, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// Reconcile writes Healthy and status.paths, and looks again when the next report goes stale.
func (r *PathStatus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.now()
	eff := settings.EffectiveNetwork(s)
	network := settings.NADRef(r.KubeVirtNamespace, eff.NAD)
	h := r.Paths.Load()
	if network != "" && (h == nil || h.Network != network) {
		// The observer has not rebuilt for this network yet; its publish brings us back.
		return reconcile.Result{}, nil
	}
	if network == "" {
		// No migration network: no Healthy condition, no status.paths, no path gauges; a network
		// migranet does not judge: Healthy Unknown, saying so.
		r.Metrics.pathsObserved(nil, 0)
		return reconcile.Result{}, r.apply(ctx, s, withoutNetwork(eff), map[string]any{"paths": nil}, now)
	}
	v := judgePaths(h, network, attachedNodes(s), now)
	r.Metrics.pathsObserved(&v, r.Observer.LongestRound())
	conds, fields := []metav1.Condition{v.cond}, map[string]any{"paths": &v.paths}
	requeue := untilStale(h, now)
	if !statuswrite.WouldChange(s, conds, fields) {
		r.tellSilent(s, v, false)
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	transition := statuswrite.ConditionChanged(s.Status.Conditions, v.cond)
	if wait := r.wait(now); !transition && wait > 0 {
		return reconcile.Result{RequeueAfter: minPositive(requeue, wait)}, nil
	}
	if transition {
		r.Recorder.Event(s, pathsEventType(v.cond), pathsEventReason(v.cond), v.cond.Message)
	}
	r.tellSilent(s, v, transition)
	if err := r.apply(ctx, s, conds, fields, now); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// apply writes the path part of the status, unless unchanged, and counts the step.
func (r *PathStatus) apply(ctx context.Context, s *v1beta1.Setting, conds []metav1.Condition, fields map[string]any, now time.Time) error {
	if !statuswrite.WouldChange(s, conds, fields) {
		return nil
	}
	err := statuswrite.ApplyStatus(ctx, r.Client, s, statuswrite.FieldManagerPaths, conds, fields)
	r.Metrics.pathStep(err)
	if err != nil {
		statuswrite.RecordWriteFailure(r.Recorder, s, statuswrite.FieldManagerPaths, err)
		return err
	}
	r.wrote(now)
	return nil
}

func (r *PathStatus) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// wait is how long until the next write that is not a transition may go out.
func (r *PathStatus) wait(now time.Time) time.Duration {
	interval := r.WriteInterval
	if interval <= 0 {
		interval = DefaultPathsWriteInterval
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastWrite.IsZero() {
		return 0
	}
	return r.lastWrite.Add(interval).Sub(now)
}

func (r *PathStatus) wrote(now time.Time) {
	r.mu.Lock()
	r.lastWrite = now
	r.mu.Unlock()
}

// tellSilent records a Warning event naming the nodes whose agent fell silent since the last
// look, unless the condition's own transition event to AgentSilent just named them.
func (r *PathStatus) tellSilent(s *v1beta1.Setting, v pathVerdict, transition bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var fresh []string
	next := make(map[string]bool, len(v.silent))
	for _, n := range v.silent {
		next[n] = true
		if !r.silent[n] {
			fresh = append(fresh, n)
		}
	}
	r.silent = next
	if len(fresh) == 0 || (transition && v.cond.Reason == ReasonAgentSilent) {
		return
	}
	r.Recorder.Event(s, corev1.EventTypeWarning, ReasonAgentSilent, silentMessage(fresh))
}

// silentMessage says which nodes' agents are silent and what to check.
func silentMessage(nodes []string) string {
	return fmt.Sprintf("the probe agent of %s finished no round within its bound (3 of its intervals): hung, crashed or not running; "+
		"its paths are judged only by its peers' probes towards it until it reports again (kubectl -n migranet-probe get pods -o wide; kubectl get mpr)",
		strings.TrimSuffix(strings.TrimSuffix(nodeList(nodes, worstNodes), " is"), " are"))
}

// untilStale is how long until the next report of h goes stale (a little after, so the look then
// sees it stale), 0 when none will.
func untilStale(h *health.PathHealth, now time.Time) time.Duration {
	next := h.NextStale(now)
	if next.IsZero() {
		return 0
	}
	return next.Sub(now) + 10*time.Millisecond
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// attachedNodes are the nodes status.nodes gives an address on the current network.
func attachedNodes(s *v1beta1.Setting) []string {
	var out []string
	for _, n := range s.Status.Nodes {
		if n.Reason == "" && n.IP != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

// pathVerdict is the path part of the status and what the gauges show.
type pathVerdict struct {
	cond  metav1.Condition
	paths v1beta1.PathsStatus
	// byReason counts the failing directions between attached nodes by reason.
	byReason map[string]int
	// silent are the attached nodes whose agent is silent, sorted.
	silent []string
}

// judgePaths sums up h over the pairs of attached at now: the Healthy condition, status.paths and
// the failing directions by reason. Messages name nodes and say what to check, never a time or a
// count that moves without a transition.
func judgePaths(h *health.PathHealth, network string, attached []string, now time.Time) pathVerdict {
	v := pathVerdict{paths: h.Summary(attached, now), byReason: map[string]int{}}
	v.cond = metav1.Condition{Type: v1beta1.ConditionHealthy}
	in := make(map[string]bool, len(attached))
	for _, a := range attached {
		in[a] = true
	}
	perNode := map[string]int{}
	var stale []string
	v.silent = h.SilentNodes(attached, now)
	sort.Strings(v.silent)
	for _, a := range attached {
		if !h.Fresh(a, now) {
			stale = append(stale, a)
		}
		for _, f := range h.Faults(a, now) {
			if f.From == a && in[f.To] && f.To != a {
				v.byReason[f.Reason]++
				perNode[f.From]++
				perNode[f.To]++
			}
		}
	}
	switch {
	case len(attached) < 2:
		// Nothing proven (and no migration possible): not True, so a rollout's start does not
		// flip Healthy to True and back.
		v.cond.Status, v.cond.Reason = metav1.ConditionUnknown, ReasonNotProbed
		v.cond.Message = "fewer than two nodes are attached to the migration network: no path to verify"
	case v.paths.Failing > 0:
		v.cond.Status, v.cond.Reason = metav1.ConditionFalse, ReasonPathsFailing
		first := ""
		if len(v.paths.Failures) > 0 {
			first = v.paths.Failures[0].Message
		}
		v.cond.Message = fmt.Sprintf("migration paths fail between attached nodes, most from or to %s: %s (all failures: status.paths.failures, kubectl get mpr)",
			strings.Join(worst(perNode, worstNodes), ", "), first)
		if len(v.silent) > 0 {
			v.cond.Message += fmt.Sprintf("; and the probe agent of %s is silent", strings.Join(v.silent[:min(len(v.silent), worstNodes)], ", "))
		}
	case len(v.silent) > 0:
		// Not Unknown: an agent that stopped finishing rounds is a fault to fix, unlike one that
		// has not finished its first round yet.
		v.cond.Status, v.cond.Reason = metav1.ConditionFalse, ReasonAgentSilent
		v.cond.Message = "no path fails, but " + silentMessage(v.silent)
	case v.paths.Unverified > 0 && len(stale) == len(attached):
		v.cond.Status, v.cond.Reason = metav1.ConditionUnknown, ReasonNotProbed
		v.cond.Message = fmt.Sprintf("no attached node has fresh probe results on %s: is the probe agent (migranet probe) running on the nodes? (kubectl get mpr)", network)
		if problem, msg := h.Problem(stale[0]); problem != "" && allReport(h, stale, problem) {
			// The agents run and say why they cannot probe: name that, not the agent.
			v.cond.Message = fmt.Sprintf("no attached node has fresh probe results on %s: every probe agent reports %s (%s: %s) (kubectl get mpr)", network, problem, stale[0], msg)
			if problem == v1beta1.ProbeNotMeasured {
				// Simulated node networks (the local cluster): nothing to blame.
				v.cond.Message = fmt.Sprintf("the paths of %s are %s (kubectl get mpr)", network, msg)
			}
		}
	case v.paths.Unverified > 0 && len(stale) > 0:
		v.cond.Status, v.cond.Reason = metav1.ConditionUnknown, ReasonPathsUnverified
		v.cond.Message = fmt.Sprintf("no path fails, but %s without fresh probe results: agent down, not reported yet or unable to probe (kubectl get mpr)", nodeList(stale, worstNodes))
	case v.paths.Unverified > 0:
		v.cond.Status, v.cond.Reason = metav1.ConditionUnknown, ReasonPathsUnverified
		v.cond.Message = "no path fails, but nodes that joined have not been probed by every peer yet"
	default:
		v.cond.Status, v.cond.Reason = metav1.ConditionTrue, ReasonPathsVerified
		v.cond.Message = "every pair of attached nodes has a verified migration path (both directions, full MTU)"
	}
	return v
}

// worst names the nodes (up to n) with the most failing directions, by name.
func worst(perNode map[string]int, n int) []string {
	names := make([]string, 0, len(perNode))
	for name := range perNode {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if perNode[names[i]] != perNode[names[j]] {
			return perNode[names[i]] > perNode[names[j]]
		}
		return names[i] < names[j]
	})
	// Only the nodes with the most failures: with one node's uplink narrowed, every pair of its
	// peers fails once too, and naming them beside it would hide it.
	top := 0
	for top < len(names) && top < n && perNode[names[top]] == perNode[names[0]] {
		top++
	}
	return names[:top]
}

// nodeList names up to n nodes and says how many more there are.
func nodeList(nodes []string, n int) string {
	sorted := append([]string(nil), nodes...)
	sort.Strings(sorted)
	if len(sorted) == 1 {
		return "node " + sorted[0] + " is"
	}
	if len(sorted) <= n {
		return "nodes " + strings.Join(sorted, ", ") + " are"
	}
	return fmt.Sprintf("nodes %s and %d more are", strings.Join(sorted[:n], ", "), len(sorted)-n)
}

// pathsEventType is Normal for Healthy True and for Unknown (a node joining, the network
// changing), Warning for a failing path.
func pathsEventType(c metav1.Condition) string {
	if c.Status == metav1.ConditionFalse {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// pathsEventReason is the event's reason: PathsHealthy when all paths are verified, else the
// condition's.
func pathsEventReason(c metav1.Condition) string {
	if c.Status == metav1.ConditionTrue {
		return ReasonPathsHealthy
	}
	return c.Reason
}

// allReport reports whether every node of nodes reports problem.
func allReport(h *health.PathHealth, nodes []string, problem string) bool {
	for _, n := range nodes {
		if p, _ := h.Problem(n); p != problem {
			return false
		}
	}
	return true
}

// withoutNetwork is the path part's conditions when no network of migranet's is in force: none
// for the pod network (no Healthy condition), Healthy Unknown naming the NAD for a network
// migranet does not judge.
func withoutNetwork(eff settings.Effective) []metav1.Condition {
	nj := eff.NotJudged
	if nj == nil {
		return nil
	}
	return []metav1.Condition{{Type: v1beta1.ConditionHealthy, Status: metav1.ConditionUnknown, Reason: health.ReasonNetworkNotJudged,
		Message: fmt.Sprintf("KubeVirt migrates over NetworkAttachmentDefinition %s, which migranet does not judge (%s): its paths are not probed, "+
			"and no migration is refused, steered or aborted on their account", nj.Ref, nj.Why)}}
}
