package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/sim"
)

// The control-plane run's sizes (the first is the baseline), its agents' interval and the
// network it runs (a /20: room for every node's virt-handler).
var controlSizes = []int{100, 1000}

const (
	ctlInterval = 10 * time.Second
	ctlValue    = `{"clusterNetwork":"` + cluster.DefaultClusterNetwork + `","vlan":100,"range":"10.100.0.0/20"}`
	ctlRounds   = 3 // steady rounds measured
)

// ctlRun is what one control-plane size measured.
type ctlRun struct {
	nodes                        int
	attach                       time.Duration // nodes created → every virt-handler attached
	writeRound                   time.Duration // the agents' writes of one round, 16 at a time
	verified                     time.Duration // first round written → every pair verified
	mgrMicrosPerReport           float64       // the manager replicas' CPU per report written
	apiMicrosPerReport           float64       // the API server's
	mgrRSSMiB                    float64       // the first manager replica's RSS after the steady rounds
	named, allFailing, silentAt  time.Duration
	silentBound                  time.Duration
	admitP50, admitP99, baseP50  time.Duration
	admitted, admissions, falses int
	narrowed, silent             string
}

// benchScaleControl runs the control plane alone (kwok nodes, simulated KubeVirt and node
// networks, no agent process) at 100 and then 1,000 nodes, with one synthetic probe agent per node
// writing its node's PathReport every 10 s as the real agent writes it (its own client and a token
// bound to its pod, which the PathReport policy checks), and measures: how long after a round's
// reports every pair is verified in the setting's status; what the reports cost the manager and the
// API server per report, and the manager's memory per node; how long until Healthy names a node
// whose uplink narrowed (every pair of it failing in the next round's reports) and one whose agent
// went silent (AgentSilent, bound three intervals after its last round); and the latency of a
// migration's admission (dry run, through the API server) against a dry-run create nothing judges.
func benchScaleControl() ([]string, error) {
	var runs []ctlRun
	sizes := controlSizes
	if v := os.Getenv("BENCH_SCALE_CONTROL_NODES"); v != "" { // e.g. "100" or "100,300": one run per size, the first the baseline
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 4 {
				return nil, fmt.Errorf("BENCH_SCALE_CONTROL_NODES=%q: want node counts of at least 4, comma-separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		r, err := scaleControl(n)
		if err != nil {
			return nil, fmt.Errorf("%d nodes: %w", n, err)
		}
		runs = append(runs, r)
	}
	base, big := runs[0], runs[len(runs)-1]
	line := func(r ctlRun) string {
		return fmt.Sprintf("%d nodes (virt-handlers attached in %.0f s; synthetic reports every %s, written in %.1f s): %d pairs verified %.2f s after a round; per report: manager %.0f µs CPU, API server %.0f µs; manager RSS %.1f MiB; %s's uplink narrowed: named %.2f s after the round's first write, its pairs all failing after %.2f s, %d false failures; %s's agent silent: AgentSilent %.1f s after its last round (bound %s); admission p50 %.1f ms, p99 %.1f ms (%d of %d admitted), a dry-run create nothing judges p50 %.1f ms",
			r.nodes, r.attach.Seconds(), ctlInterval, r.writeRound.Seconds(), r.nodes*(r.nodes-1)/2, r.verified.Seconds(), r.mgrMicrosPerReport, r.apiMicrosPerReport,
			r.mgrRSSMiB, r.narrowed, r.named.Seconds(), r.allFailing.Seconds(), r.falses, r.silent, r.silentAt.Seconds(), r.silentBound,
			ms(r.admitP50), ms(r.admitP99), r.admitted, r.admissions, ms(r.baseP50))
	}
	return []string{
		"bench scale-control: " + line(big),
		"bench scale-control: baseline " + line(base),
		fmt.Sprintf("bench scale-control: %d against %d nodes: all pairs verified %.2f×, manager CPU per report %.2f×, manager RSS %.2f× (%.1f KiB per node added), a narrowed uplink named %.2f×, admission p50 %.2f× (its own margin over a dry-run create: %.2f× at %d nodes)",
			big.nodes, base.nodes, big.verified.Seconds()/base.verified.Seconds(), big.mgrMicrosPerReport/base.mgrMicrosPerReport,
			big.mgrRSSMiB/base.mgrRSSMiB, (big.mgrRSSMiB-base.mgrRSSMiB)*1024/float64(big.nodes-base.nodes), big.named.Seconds()/base.named.Seconds(), ms(big.admitP50)/ms(base.admitP50),
			ms(big.admitP50)/ms(big.baseP50), big.nodes),
	}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// scaleControl brings up the control plane with n nodes and measures it (benchScaleControl).
func scaleControl(n int) (ctlRun, error) {
	r := ctlRun{nodes: n, narrowed: fmt.Sprintf("node-%d", n/2), silent: fmt.Sprintf("node-%d", n/3)}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-scale-control-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	// Three nodes first, the network set, then the rest: their virt-handlers start on the network
	// (a network set over n nodes would roll n virt-handlers one after another).
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster"), Nodes: cluster.DefaultNodes(3),
		SimulatedKubeVirt: true, NodeNetworks: env.NodeNetworksSimulated, ReportsByCaller: true})
	if err != nil {
		return r, err
	}
	defer e.Stop()
	if err := setValue(ctx, e, v1beta1.MigrationNetwork, ctlValue); err != nil {
		return r, err
	}
	specs := cluster.DefaultNodes(n)[3:]
	began := time.Now()
	if err := parallel(len(specs), 16, func(i int) error { return e.Client.Create(ctx, cluster.NodeObject(specs[i])) }); err != nil {
		return r, err
	}
	if err := until(ctx, 20*time.Minute, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		return err == nil && attached(s) == n, err
	}); err != nil {
		return r, fmt.Errorf("the %d nodes' virt-handlers never all attached: %w", n, err)
	}
	r.attach = time.Since(began)
	agents, err := newSyntheticAgents(ctx, e, dir, n)
	if err != nil {
		return r, err
	}
	return r, agents.measure(ctx, e, &r)
}

// attached counts the nodes the setting's status has on the network (an address).
func attached(s *v1beta1.Setting) int {
	k := 0
	for _, node := range s.Status.Nodes {
		if node.IP != "" {
			k++
		}
	}
	return k
}

// syntheticAgents write the n nodes' PathReports as their agents would.
type syntheticAgents struct {
	nodes   []string
	clients map[string]client.Client
	handler map[string]corev1.Pod // node → its virt-handler pod
	reports []*v1beta1.PathReport // by the index of its node in nodes
	network string
	since   time.Time
}

// newSyntheticAgents makes one client per agent pod, with a token bound to the pod.
func newSyntheticAgents(ctx context.Context, e *env.Env, dir string, n int) (*syntheticAgents, error) {
	a := &syntheticAgents{clients: map[string]client.Client{}, handler: map[string]corev1.Pod{},
		since: time.Now().Add(-time.Minute)} // before every round's start: the agents began probing then
	kv, err := e.KubeVirt(context.Background())
	if err != nil {
		return nil, err
	}
	a.network = settings.NADRef(cluster.KubeVirtNamespace, settings.MigrationNetworkOf(kv))
	handlers := &corev1.PodList{}
	if err := e.Client.List(ctx, handlers, client.InNamespace(cluster.KubeVirtNamespace),
		client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}); err != nil {
		return nil, err
	}
	for _, p := range handlers.Items {
		a.handler[p.Spec.NodeName] = p
	}
	pods := &corev1.PodList{}
	if err := e.Client.List(ctx, pods, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{sim.ProbeAgentLabel: sim.ProbeAgentValue})}); err != nil {
		return nil, err
	}
	var agentPods []corev1.Pod
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && a.handler[p.Spec.NodeName].UID != "" {
			agentPods = append(agentPods, p)
			a.nodes = append(a.nodes, p.Spec.NodeName)
		}
	}
	if len(agentPods) != n {
		return nil, fmt.Errorf("%d agent pods beside a virt-handler, want %d", len(agentPods), n)
	}
	tokens := &sim.ProbeAgents{Client: e.Client, Clientset: e.Clientset, Server: e.Config.Host, CA: e.CA.CertPEM, Dir: dir}
	clients := make([]client.Client, n)
	if err := parallel(n, 16, func(i int) (err error) {
		clients[i], err = tokens.PodClient(ctx, &agentPods[i])
		return err
	}); err != nil {
		return nil, err
	}
	for i, node := range a.nodes {
		a.clients[node] = clients[i]
	}
	a.reports = make([]*v1beta1.PathReport, n)
	return a, nil
}

// round writes every node's report but skip's, each failing the peers fail[node] names (every
// peer for "*"), and returns when the last write returned.
func (a *syntheticAgents) round(ctx context.Context, fail map[string][]string, skip string) error {
	return parallel(len(a.nodes), 16, func(i int) error {
		node := a.nodes[i]
		if node == skip {
			return nil
		}
		now := time.Now()
		r := a.reports[i]
		if r == nil {
			h := a.handler[node]
			addr, _ := settings.PodMigrationAddr(&h)
			r = &v1beta1.PathReport{Network: a.network, VirtHandlerUID: h.UID, Address: addr.String(), Port: 4797, MTU: 1500,
				IntervalSeconds: int32(ctlInterval / time.Second), Since: microTime(a.since)}
			r.Name = node
		}
		r.LastRound = &v1beta1.ProbeRound{Started: microTime(now.Add(-time.Second)), Completed: microTime(now), Peers: int32(len(a.nodes) - 1)}
		r.Failing = nil
		for _, peer := range fail[node] {
			if peer == "*" {
				for _, p := range a.nodes {
					if p != node {
						r.Failing = append(r.Failing, mtuFailure(p, now))
					}
				}
				continue
			}
			r.Failing = append(r.Failing, mtuFailure(peer, now))
		}
		r.LastRound.Failing = int32(len(r.Failing))
		c := a.clients[node]
		var err error
		if r.ResourceVersion == "" {
			err = c.Create(ctx, r)
		} else {
			err = c.Update(ctx, r)
		}
		if err != nil {
			return fmt.Errorf("PathReport %s: %w", node, err)
		}
		a.reports[i] = r
		return nil
	})
}

// measure runs the rounds of benchScaleControl and fills r.
func (a *syntheticAgents) measure(ctx context.Context, e *env.Env, r *ctlRun) error {
	n := len(a.nodes)
	pairs := int32(n * (n - 1) / 2)
	began := time.Now()
	if err := a.round(ctx, nil, ""); err != nil {
		return err
	}
	r.writeRound = time.Since(began)
	written := time.Now()
	if err := until(ctx, 2*time.Minute, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		c := healthyCondition(s)
		return err == nil && s.Status.Paths != nil && s.Status.Paths.Verified == pairs && c != nil && c.Status == "True", err
	}); err != nil {
		return fmt.Errorf("the %d pairs were never all verified: %w", pairs, err)
	}
	r.verified = time.Since(written)
	// Steady rounds: the manager's and the API server's CPU per report.
	api := processOf("kube-apiserver", e.Dir)
	if api == 0 {
		return fmt.Errorf("no kube-apiserver process of %s", e.Dir)
	}
	cpu0, err := cpuOf(append(replicaPIDs(e), api))
	if err != nil {
		return err
	}
	for k := 0; k < ctlRounds; k++ {
		if err := a.round(ctx, nil, ""); err != nil {
			return err
		}
		if err := pause(ctx, ctlInterval); err != nil {
			return err
		}
	}
	cpu1, err := cpuOf(append(replicaPIDs(e), api))
	if err != nil {
		return err
	}
	reports := float64(n * ctlRounds)
	r.apiMicrosPerReport = float64(cpu1[len(cpu1)-1]-cpu0[len(cpu0)-1]) / clockTicks * 1e6 / reports
	var mgrTicks int64
	for i := range len(cpu1) - 1 {
		mgrTicks += cpu1[i] - cpu0[i]
	}
	r.mgrMicrosPerReport = float64(mgrTicks) / clockTicks * 1e6 / reports
	rss, err := e.Manager.RSS()
	if err != nil {
		return err
	}
	r.mgrRSSMiB = float64(rss) / (1 << 20)
	if err := a.admission(ctx, e, r); err != nil {
		return err
	}
	if err := a.narrow(ctx, e, r); err != nil {
		return err
	}
	return a.silence(ctx, e, r)
}

// narrow writes a round in which r.narrowed fails towards every peer and every peer towards it
// (an uplink narrowed below the MTU), and times the naming.
func (a *syntheticAgents) narrow(ctx context.Context, e *env.Env, r *ctlRun) error {
	fail := map[string][]string{r.narrowed: {"*"}}
	for _, node := range a.nodes {
		if node != r.narrowed {
			fail[node] = []string{r.narrowed}
		}
	}
	mentions := regexp.MustCompile(`\b` + regexp.QuoteMeta(r.narrowed) + `\b`)
	// Timed from the round's first write: the agents write over the round, not at its end.
	written := time.Now()
	if err := a.round(ctx, fail, ""); err != nil {
		return err
	}
	err := until(ctx, 2*time.Minute, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		if err != nil {
			return false, err
		}
		p := s.Status.Paths
		for _, f := range pathFailures(p) {
			if f.From != r.narrowed && f.To != r.narrowed {
				r.falses++
			}
		}
		if c := healthyCondition(s); r.named == 0 && c != nil && c.Status == "False" && mentions.MatchString(c.Message) {
			r.named = time.Since(written)
		}
		if r.named != 0 && p != nil && p.Failing == int32(len(a.nodes)-1) {
			r.allFailing = time.Since(written)
			return true, nil
		}
		return false, nil
	})
	if err != nil || r.falses > 0 {
		return fmt.Errorf("%s's narrowed uplink (named after %s, %d false failures): %v", r.narrowed, r.named, r.falses, err)
	}
	// Repaired: the next round is clean again.
	if err := a.round(ctx, nil, ""); err != nil {
		return err
	}
	return until(ctx, 2*time.Minute, func() (bool, error) {
		s, err := networkSetting(ctx, e)
		return err == nil && s.Status.Paths != nil && s.Status.Paths.Failing == 0, err
	})
}

// silence stops r.silent's reports, writes the others every interval, and times AgentSilent.
func (a *syntheticAgents) silence(ctx context.Context, e *env.Env, r *ctlRun) error {
	last := a.reports[slices.Index(a.nodes, r.silent)].LastRound.Completed.Time
	r.silentBound = 3 * ctlInterval
	mentions := regexp.MustCompile(`\b` + regexp.QuoteMeta(r.silent) + `\b`)
	deadline := last.Add(r.silentBound + 30*time.Second)
	next := time.Now()
	for time.Now().Before(deadline) {
		if !time.Now().Before(next) {
			if err := a.round(ctx, nil, r.silent); err != nil {
				return err
			}
			next = time.Now().Add(ctlInterval)
		}
		s, err := networkSetting(ctx, e)
		if err != nil {
			return err
		}
		if c := healthyCondition(s); c != nil && c.Reason == "AgentSilent" && mentions.MatchString(c.Message) {
			r.silentAt = time.Since(last)
			if r.silentAt < r.silentBound {
				return fmt.Errorf("%s named AgentSilent %s after its last round, before its bound %s", r.silent, r.silentAt, r.silentBound)
			}
			return nil
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s's agent silent since %s: never named AgentSilent within its bound %s and 30 s", r.silent, last.Format(time.RFC3339), r.silentBound)
}

// pathFailures is p's failures, none for a nil p.
func pathFailures(p *v1beta1.PathsStatus) []v1beta1.PathFailure {
	if p == nil {
		return nil
	}
	return p.Failures
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
