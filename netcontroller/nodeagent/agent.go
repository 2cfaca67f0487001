package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Config is what an agent is told (the flags of `migranet probe`, validated by Validate).
type Config struct {
	Node              string
	KubeVirtNamespace string
	// AgentNamespace and AgentSelector find the agents' own pods: a peer is probed only while its
	// agent's pod is Ready, so a node without a running agent is never reported unreachable.
	AgentNamespace string
	AgentSelector  labels.Selector
	ProcRoot       string
	Port           int
	Interval       time.Duration
	Timeout        time.Duration
	Tries          int
	// MaxRate bounds the probes a round sends per second (replies and the volleys of a failing
	// peer not counted); a round over many peers then lasts longer than Interval.
	MaxRate float64
	// KeepNeighbours leaves the neighbour entries the probes make (one per peer, in the node's
	// one table); by default the agent keeps up to its cap (NeighbourLimits.Cap, three quarters
	// of its share of the node's table) and removes the least recently used beyond it once
	// NeighbourGrace passes without an exchange with their peer (0: DefaultNeighbourGrace).
	KeepNeighbours bool
	NeighbourGrace time.Duration
	Version        string
	// Metrics, when set, is kept up to date with each round's neighbour table.
	Metrics *Metrics
}

// APITimeout bounds each API request of a round (reading the NAD, writing the report): an API
// server that does not answer delays the round by this much, never for ever.
const APITimeout = 10 * time.Second

// DefaultNeighbourGrace is how long the agent leaves a peer's neighbour entry after its last
// exchange with the peer: long enough for a peer's check (two probes a round trip apart), short
// enough that at 1,000 peers a round of 20 s holds about 2 × 1,000 / 20 × 0.2 = 20 entries.
const DefaultNeighbourGrace = 200 * time.Millisecond

// Agent probes its node's paths and writes its PathReport.
type Agent struct {
	Config
	// Client writes the report and reads the Node and NAD; Pods reads virt-handler and agent pods
	// (a cache).
	Client client.Client
	Pods   client.Reader
	// Budget reads the migration-policy Setting and the agent's own Node (a cache): the node's
	// migration budget, which the agent shapes migration0 to (budget.go); nil shapes nothing.
	// BudgetChanged, when set, says either changed: the budget is applied at once, not at the
	// next check.
	Budget        client.Reader
	BudgetChanged <-chan struct{}

	cur *session
	// memory holds each peer's last check (Memory): what dates a failure a round finds.
	memory Memory
	// notReady says why the agent does not answer probes ("" while it does); see Ready.
	notReady atomic.Pointer[string]
	// watch is the round watchdog (Live), from Run's start.
	watch atomic.Pointer[Watchdog]
}

// Live is the agent's liveness check (/healthz): nil while its rounds keep finishing within
// their bound (Watchdog), and before Run has started.
func (a *Agent) Live(r *http.Request) error {
	if w := a.watch.Load(); w != nil {
		return w.Live(r)
	}
	return nil
}

// Ready is the agent's readiness check: nil once its socket is open on migration0 and answering,
// so that peers probe it only then (they probe the nodes whose agent pod is Ready).
func (a *Agent) Ready(*http.Request) error {
	if why := a.notReady.Load(); why == nil || *why != "" {
		if why == nil {
			return errors.New("not probing yet")
		}
		return errors.New(*why)
	}
	return nil
}

// session is one network probed from one address: a change of either starts a new one.
type session struct {
	network, podUID string
	addr            netip.Addr
	mtu             int
	// netns is the device and inode of the namespace the socket lives in.
	netns [2]uint64
	// since is when the agent saw its own pod Ready in this session (zero before): peers probe
	// it from then on.
	since  time.Time
	prober *Prober
	// neighbourWarned: the session logged why it cannot read or clean the neighbour table.
	neighbourWarned bool
	// shaping keeps migration0 shaped to the budget and measures its traffic; nil when the
	// shaper could not be opened (shapingErr says why).
	shaping    *shaping
	shapingErr string
}

// migration is the session's traffic report: what crossed migration0 since the last one, and
// the budget's shaping.
func (s *session) migration() *v1beta1.MigrationTraffic {
	if s.shaping == nil {
		return &v1beta1.MigrationTraffic{Shaping: v1beta1.ShapingFailed, Message: s.shapingErr}
	}
	return s.shaping.report()
}

// located is where the node's virt-handler is on the migration network, or why it is not.
type located struct {
	network, podUID string
	addr            netip.Addr
	problem, msg    string
}

// Run probes round after round until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", a.Node)
	defer a.closeSession()
	w := NewWatchdog(time.Now(), health.SilentAfter(a.Period(0)))
	a.watch.Store(w)
	a.Metrics.watch(a.Node, w)
	for {
		start := time.Now()
		report := a.round(ctrl.LoggerInto(ctx, log))
		if err := a.write(ctx, report); err != nil {
			log.Error(err, "writing the PathReport")
		}
		w.Finished(time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(a.Interval))):
		}
	}
}

// round runs one round (or finds why it cannot) and returns the report to write.
func (a *Agent) round(ctx context.Context) *v1beta1.PathReport {
	log := ctrl.LoggerFrom(ctx)
	loc := a.locate(ctx)
	if loc.problem == "" && (a.cur == nil || a.cur.network != loc.network || a.cur.addr != loc.addr || a.cur.podUID != loc.podUID || a.moved(loc)) {
		a.closeSession()
		if err := a.open(ctx, loc); err != nil {
			loc.problem, loc.msg = problemOf(err), err.Error()
		} else {
			log.Info("probing", "network", loc.network, "address", loc.addr, "mtu", a.cur.mtu)
		}
	}
	r := &v1beta1.PathReport{Network: loc.network, Port: int32(a.Port), AgentVersion: a.Version, IntervalSeconds: seconds(a.Period(0))}
	r.Name, r.VirtHandlerUID = a.Node, types.UID(loc.podUID)
	if loc.problem != "" {
		a.closeSession()
		why := loc.problem + ": " + loc.msg
		a.notReady.Store(&why)
		r.Problem, r.Message = loc.problem, loc.msg
		if loc.addr.IsValid() {
			r.Address = loc.addr.String()
		}
		r.Since = metav1.NowMicro()
		return r
	}
	s := a.cur
	ok := ""
	a.notReady.Store(&ok)
	r.Address, r.MTU = s.addr.String(), int32(s.mtu)
	r.Migration = s.migration()
	// Peers probe this node once its agent pod is Ready, as their caches see it; this agent's
	// cache sees the same: Since is when it saw its own pod Ready in this session, and only rounds
	// begun after a node's Since cover it (health.PathHealth.Pair).
	if s.since.IsZero() && a.liveAgents(ctx)[a.Node] != "" {
		s.since = time.Now()
	}
	peers, liveAtStart := a.peers(ctx, s)
	// The round's bound, from here on: its peers stretch it under the probe rate limit. The
	// report names it also before the first round, whose end it bounds.
	period := a.Period(len(peers))
	r.IntervalSeconds = seconds(period)
	if s.since.IsZero() {
		r.Since = metav1.NowMicro() // no round yet: nothing it says verifies anything
		return r
	}
	r.Since = metav1.NewMicroTime(s.since)
	if w := a.watch.Load(); w != nil {
		w.Expect(health.SilentAfter(period))
	}
	before, beforeErr := ReadHostNeighbourStats(a.ProcRoot, s.addr.Is4())
	limits, limitsErr := HostNeighbourLimits(a.ProcRoot, s.addr.Is4())
	if limitsErr != nil {
		s.prober.SetNeighbourCap(DefaultNeighbourLimits.Cap())
	} else {
		s.prober.SetNeighbourCap(limits.Cap())
	}
	_, _, _ = s.prober.NeighbourUse() // the peak starts with the round
	started := time.Now()
	results := s.prober.Round(ctx, peers, a.spread(len(peers)))
	// A peer whose agent stopped during the round did not answer for that reason: its path is not
	// judged this round. Stopped means not Ready now, or Ready as another pod (a restart the
	// round straddled: the new agent resumes its node's since, so a failure the old one's end
	// caused would count against the pair; seen in a rollout of the agents as PathsFailing).
	results = JudgedThisRound(results, liveAtStart, a.liveAgents(ctx))
	r.LastRound = &v1beta1.ProbeRound{Started: metav1.NewMicroTime(started), Completed: metav1.NowMicro(), Peers: int32(len(results))}
	r.NeighbourTable = a.neighbourTable(ctx, s, len(peers), limits, limitsErr, before, beforeErr)
	if nt := r.NeighbourTable; Untrusted(results, nt.Overflows) {
		// The kernel refused new neighbour entries while peers did not answer: their probes may
		// have been dropped for want of an entry. No verdict of this round is reported; the round
		// itself is (the agent is not silent).
		r.Problem, r.Message = v1beta1.ProbeNeighbourTableFull, nt.Message
		if r.Message == "" {
			r.Message = fmt.Sprintf("the node's %s neighbour table overflowed %d times during the round; raise its gc_thresh1/2/3 (docs/observability.md#runbook-migranetneighbourtabletoosmall)", nt.Family, nt.Overflows)
		}
		log.Info("the node's neighbour table overflowed during the round: its failures are not reported", "overflows", nt.Overflows, "message", nt.Message)
		return r
	}
	a.record(ctx, r, results)
	return r
}

// Untrusted says whether a round's verdicts cannot be reported: the node's neighbour table
// refused new entries (overflows) during it and some peer failed. A failure may then be the
// kernel's (a probe or reply dropped for want of an entry), a pass cannot.
func Untrusted(results []Result, overflows int64) bool {
	return overflows > 0 && slices.ContainsFunc(results, func(r Result) bool { return r.Reason != "" })
}

// neighbourTable reads the node's neighbour table after a round (limits, entries, overflows
// since before) and judges whether its limits hold the probing.
func (a *Agent) neighbourTable(ctx context.Context, s *session, peers int, l NeighbourLimits, limitsErr error, before NeighbourStats, beforeErr error) *v1beta1.NeighbourTable {
	log := ctrl.LoggerFrom(ctx)
	is4 := s.addr.Is4()
	c := NeighbourCheck{IPv4: is4, Peers: peers}
	nt := &v1beta1.NeighbourTable{Family: "IPv6", Peers: int32(peers)}
	if is4 {
		nt.Family = "IPv4"
	}
	removing, peak, rerr := s.prober.NeighbourUse()
	c.Removing, nt.RemovesEntries = removing, removing
	if rerr != nil && !s.neighbourWarned {
		s.neighbourWarned = true
		log.Info("not removing the probes' neighbour entries", "error", rerr.Error())
	}
	c.Entries = peak
	if held, err := s.prober.Neighbours(); err == nil && !removing {
		c.Entries = len(held) // no sweeps to sample it: the count after the round
	}
	nt.Entries = int32(c.Entries)
	if limitsErr == nil {
		c.Limits = l
		nt.GCThresh1, nt.GCThresh2, nt.GCThresh3, nt.Budget = int32(l.GCThresh1), int32(l.GCThresh2), int32(l.GCThresh3), int32(l.Budget())
	} else if !s.neighbourWarned {
		s.neighbourWarned = true
		log.Info("cannot read the node's neighbour table limits (the initial network namespace's sysctls, entered through the host's PID 1 or 2); assuming the defaults", "error", limitsErr.Error())
	}
	if after, err := ReadHostNeighbourStats(a.ProcRoot, is4); err == nil {
		nt.TableEntries = int64(after.Entries)
		c.TableEntries = nt.TableEntries
		if beforeErr == nil && after.TableFulls > before.TableFulls {
			nt.Overflows = int64(after.TableFulls - before.TableFulls)
			c.Overflows = nt.Overflows
		}
	}
	nt.Message = c.Message()
	a.Metrics.observe(a.Node, nt)
	return nt
}

// spread is how long a round of n peers spreads its probes over: the interval less what the last
// peer's check may take, or longer when MaxRate says so (two probes per healthy peer).
func (c Config) spread(n int) time.Duration {
	s := max(c.Interval-c.checkBudget(), 0)
	if c.MaxRate > 0 {
		s = max(s, time.Duration(float64(2*n)/c.MaxRate*float64(time.Second)))
	}
	return s
}

// checkBudget is the longest one peer's check may take: its small and full-size exchanges and
// the volleys of a failing one.
func (c Config) checkBudget() time.Duration { return time.Duration(c.Tries+2) * c.Timeout }

// Period is the time between the starts of two rounds over peers peers: the interval, or longer
// when MaxRate stretches the round (its spread and the last check) beyond it — at 200 probes a
// second, from about 1,700 peers on with the defaults. It is the interval a report names
// (IntervalSeconds), from which health.SilentAfter derives when the round is overdue.
func (c Config) Period(peers int) time.Duration {
	return max(c.Interval, c.spread(peers)+c.checkBudget())
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int32 { return int32((d + time.Second - 1) / time.Second) }

// record folds a round's results into the report: the failing peers (each keeping when it began
// failing), the round-trip times.
func (a *Agent) record(ctx context.Context, r *v1beta1.PathReport, results []Result) {
	log := ctrl.LoggerFrom(ctx)
	started, interval := r.LastRound.Started.Time, time.Duration(r.IntervalSeconds)*time.Second
	next := map[string]v1beta1.PeerPath{}
	var rtts []time.Duration
	for _, res := range results {
		if res.RTT > 0 {
			rtts = append(rtts, res.RTT)
			if res.RTT.Microseconds() > r.LastRound.MaxRTTMicros {
				r.LastRound.MaxRTTMicros, r.LastRound.MaxRTTNode = res.RTT.Microseconds(), res.Node
			}
		}
		if res.Reason == "" {
			if a.memory.Failing(res.Node) {
				log.Info("path passes again", "peer", res.Node)
			}
			continue
		}
		p := v1beta1.PeerPath{Node: res.Node, Address: res.Addr.Addr().String(), Reason: res.Reason, Largest: int32(res.Largest),
			Message: health.PathMessage(a.Node, res.Node, res.Reason, int(r.MTU), res.Largest)}
		prev, was, checked := a.memory.Before(res.Node, res.Addr.Addr(), started, interval)
		var isNew bool
		p.Since, p.AfterCheck, isNew = FailingSince(prev, was, checked, p.Reason, metav1.NewMicroTime(res.At))
		if isNew {
			log.Info("path fails", "peer", res.Node, "reason", p.Reason, "message", p.Message, "afterCheck", p.AfterCheck)
		}
		next[res.Node] = p
		r.Failing = append(r.Failing, p)
	}
	a.memory.Record(results, next, started, interval)
	r.LastRound.Failing = int32(len(r.Failing))
	if len(rtts) > 0 {
		slices.Sort(rtts)
		r.LastRound.MedianRTTMicros = rtts[len(rtts)/2].Microseconds()
	}
}

// locate finds the node's virt-handler pod on a migration network and its migration0 address.
func (a *Agent) locate(ctx context.Context) located {
	var pods corev1.PodList
	if err := a.Pods.List(ctx, &pods, client.InNamespace(a.KubeVirtNamespace),
		client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}, client.UnsafeDisableDeepCopy); err != nil {
		return located{problem: v1beta1.ProbeNoVirtHandler, msg: "listing virt-handler pods: " + err.Error()}
	}
	var best located
	found := false
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != a.Node || p.DeletionTimestamp != nil {
			continue
		}
		found = true
		l := located{network: settings.PodMigrationNAD(p), podUID: string(p.UID)}
		switch addr, ok := settings.PodMigrationAddr(p); {
		case l.network == "":
			l.problem, l.msg = v1beta1.ProbeNotAttached, fmt.Sprintf("virt-handler pod %s asks for no migration network (KubeVirt's migrations.network is unset or not rolled out yet)", p.Name)
		case !ok:
			l.problem, l.msg = v1beta1.ProbeNotAttached, fmt.Sprintf("virt-handler pod %s reports no %s address on %s", p.Name, settings.MigrationInterface, l.network)
		default:
			l.addr = addr
			return l
		}
		best = l
	}
	if !found {
		return located{problem: v1beta1.ProbeNoVirtHandler, msg: "no virt-handler pod on node " + a.Node}
	}
	return best
}

// podNamespace is the path of the network namespace of the pod with uid, through one of its
// processes.
func (a *Agent) podNamespace(uid string) (string, error) {
	pid, err := PodProcess(a.ProcRoot, uid)
	if err != nil {
		return "", fmt.Errorf("%w (pod UID %s under %s; the agent needs hostPID)", err, uid, a.ProcRoot)
	}
	return fmt.Sprintf("%s/%d/ns/net", a.ProcRoot, pid), nil
}

// moved reports whether the session's pod now lives in another network namespace than its socket
// (the sandbox was made anew, e.g. after a runtime restart): the socket then reaches nobody.
func (a *Agent) moved(loc located) bool {
	path, err := a.podNamespace(loc.podUID)
	if err != nil {
		return true
	}
	dev, ino, err := NamespaceID(path)
	return err != nil || [2]uint64{dev, ino} != a.cur.netns
}

// open starts a session: the virt-handler pod's network namespace, its migration0, the socket.
func (a *Agent) open(ctx context.Context, loc located) error {
	path, err := a.podNamespace(loc.podUID)
	if err != nil {
		return err
	}
	dev, ino, err := NamespaceID(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoProcess, err)
	}
	opened, err := OpenInWithNeighbours(path, settings.MigrationInterface, loc.addr, a.Port)
	if err != nil {
		return err
	}
	mtu := a.configuredMTU(ctx, loc.network)
	if mtu == 0 {
		mtu = opened.MTU
	}
	p := NewProber(opened.Conn, loc.network, mtu, a.Timeout, a.Tries)
	p.UseNeighbours(opened.Neighbours)
	if !a.KeepNeighbours {
		grace := a.NeighbourGrace
		if grace <= 0 {
			grace = DefaultNeighbourGrace
		}
		p.RemoveNeighbours(grace)
	}
	go p.Serve()
	a.cur = &session{network: loc.network, podUID: loc.podUID, addr: loc.addr, mtu: mtu, netns: [2]uint64{dev, ino}, prober: p}
	a.memory = Memory{}
	// A restarted agent (same pod, same address) carries on from its last report: no verdict lost.
	a.resume(ctx, a.cur)
	if sh, err := OpenShaper(path, settings.MigrationInterface, a.Port); err != nil {
		a.cur.shapingErr = "cannot shape migration0: " + err.Error()
		ctrl.LoggerFrom(ctx).Info("cannot shape migration0: the node's migration budget is not enforced", "error", err.Error())
	} else {
		desired := func(ctx context.Context) (target, error) { return nodeBudget(ctx, a.Budget, a.Node) }
		a.cur.shaping = startShaping(ctx, sh, a.Node, desired, a.BudgetChanged, a.Metrics)
	}
	return nil
}

// configuredMTU is the NAD's "mtu", 0 when it has none or cannot be read (the interface's is
// used then: the bridge plugin set it from the same config).
func (a *Agent) configuredMTU(ctx context.Context, network string) int {
	ns, name, ok := strings.Cut(network, "/")
	if !ok {
		return 0
	}
	nad := &nadv1.NetworkAttachmentDefinition{}
	ctx, cancel := context.WithTimeout(ctx, APITimeout)
	defer cancel()
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		ctrl.LoggerFrom(ctx).Info("cannot read the NAD's MTU; using migration0's", "network", network, "error", err.Error())
		return 0
	}
	return settings.MTUOfConfig(nad.Spec.Config)
}

func (a *Agent) closeSession() {
	if a.cur != nil {
		_ = a.cur.prober.Close()
		if a.cur.shaping != nil {
			a.cur.shaping.close()
		}
		a.cur = nil
	}
}

// peers are the other nodes whose virt-handler is on s's network with an address and whose
// agent's pod is Ready, and the agents' pods as they were read (liveAgents).
func (a *Agent) peers(ctx context.Context, s *session) ([]Peer, map[string]types.UID) {
	live := a.liveAgents(ctx)
	var handlers corev1.PodList
	if err := a.Pods.List(ctx, &handlers, client.InNamespace(a.KubeVirtNamespace),
		client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, live
	}
	var out []Peer
	for i := range handlers.Items {
		p := &handlers.Items[i]
		if p.Spec.NodeName == a.Node || p.DeletionTimestamp != nil || live[p.Spec.NodeName] == "" || settings.PodMigrationNAD(p) != s.network {
			continue
		}
		if addr, ok := settings.PodMigrationAddr(p); ok && addr.Is4() == s.addr.Is4() {
			out = append(out, Peer{Node: p.Spec.NodeName, Addr: netip.AddrPortFrom(addr, uint16(a.Port))})
		}
	}
	return out, live
}

// liveAgents are the nodes whose agent's pod is Ready, each with that pod's UID.
func (a *Agent) liveAgents(ctx context.Context) map[string]types.UID {
	var agents corev1.PodList
	if err := a.Pods.List(ctx, &agents, client.InNamespace(a.AgentNamespace), client.MatchingLabelsSelector{Selector: a.AgentSelector},
		client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the agents' pods")
		return nil
	}
	live := map[string]types.UID{}
	for i := range agents.Items {
		if p := &agents.Items[i]; p.DeletionTimestamp == nil && settings.PodReady(p) {
			live[p.Spec.NodeName] = p.UID
		}
	}
	return live
}

// write creates or replaces the node's PathReport, owned by the Node so that it goes with it.
func (a *Agent) write(ctx context.Context, r *v1beta1.PathReport) error {
	ctx, cancel := context.WithTimeout(ctx, APITimeout)
	defer cancel()
	cur := &v1beta1.PathReport{}
	err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, cur)
	switch {
	case apierrors.IsNotFound(err):
		node := &corev1.Node{}
		if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, node); err != nil {
			return fmt.Errorf("reading node %s (the report's owner): %w", a.Node, err)
		}
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		return a.Client.Create(ctx, r)
	case err != nil:
		return err
	}
	r.ObjectMeta = cur.ObjectMeta
	return a.Client.Update(ctx, r)
}

// problemOf maps an error opening the session to the report's problem.
func problemOf(err error) string {
	switch {
	case errors.Is(err, ErrNoProcess):
		return v1beta1.ProbeNoNamespace
	case errors.Is(err, ErrNoInterface):
		return v1beta1.ProbeNoInterface
	}
	return v1beta1.ProbeSocket
}

// JudgedThisRound are the results of a round that judge a path: every pass, and the failures
// towards peers whose agent pod was the same Ready pod at the round's start (atStart) and end
// (atEnd). A failure towards a peer whose agent stopped or was replaced during the round says
// only that the agent was away.
func JudgedThisRound(results []Result, atStart, atEnd map[string]types.UID) []Result {
	return slices.DeleteFunc(results, func(r Result) bool {
		return r.Reason != "" && (atEnd[r.Node] == "" || atEnd[r.Node] != atStart[r.Node])
	})
}
