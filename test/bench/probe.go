package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/migranet/migranet/netcontroller/nodeagent"
)

const (
	prMTU  = 9000
	prLife = 6 * time.Second // each agent process probes (or sleeps) this long: rounds of its spread
	prRuns = 3               // agent processes per case, a no-op's paired with each
	// The agent's defaults (`migranet probe`), for the model.
	prInterval = 20 * time.Second
	prMaxRate  = 200.0
	// ipv4UDP is the IPv4 and UDP headers around a probe's payload; headerLen the probe header
	// (netcontroller/probe/wire.go), the small probe's and every reply's whole payload.
	ipv4UDP   = 28
	headerLen = 40
)

// prCases are the rounds measured: 100 and 1,000 peers over 2 s (a check every 20 ms and every
// 2 ms; the agent's defaults check a peer every 10 ms to 150 ms), and 100 peers at the 1,000's
// rate, which tells the cost of more peers from the cost of a faster rate. prModelNodes are the
// cluster sizes the model extends to.
var (
	prCases = []probeCase{
		{peers: 100, spread: 2 * time.Second},
		{peers: 100, spread: 200 * time.Millisecond},
		{peers: 1000, spread: 2 * time.Second},
		{peers: 100, spread: 2 * time.Second, netns: true},
	}
	prModelNodes = []int{100, 1000, 5000, 10000}
)

// benchProbe measures the probe agent's CPU and peak memory for full rounds at 100 and 1,000
// peers. The agent (probeAgent) runs in a process of its own, so its CPU (user + system, from
// wait4) and its peak RSS (VmHWM) are its alone; the peers are Probers in this process, each on its
// own UDP socket on 127.0.0.1. In a round the agent probes every peer (a 40-byte probe and one of
// MTU 9000, each answered by a 40-byte reply) while every peer probes the agent the same way, both
// spread over the case's spread: what a node does per interval in a cluster of peers+1 nodes. Each
// agent process lives prLife, as many rounds as fit, and each case runs prRuns of them, each beside
// a no-op's run: the same process opening its socket and serving for as long, but probing nothing
// and probed by nobody, so the ratios isolate the probing from the process. The last line is the
// model (probeModel) at the agent's defaults, its CPU extrapolated from the measured CPU per peer,
// and its checks against the measurements.
func benchProbe() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	most := 0
	for _, c := range prCases {
		if !c.netns {
			most = max(most, c.peers)
		}
	}
	probers := make([]*nodeagent.Prober, most)
	addrs := make([]string, most)
	for i := range probers {
		conn, err := nodeagent.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			return nil, fmt.Errorf("peer %d: %w", i, err)
		}
		probers[i] = nodeagent.NewProber(conn, prNetwork, prMTU, prTimeout, prTries)
		go probers[i].Serve()
		defer probers[i].Close()
		addrs[i] = conn.LocalAddr().String()
	}
	verbose := os.Getenv("BENCH_VERBOSE") != ""
	var noops []agentRun
	var skipped []string
	cases := slices.Clone(prCases)
	for k := range cases {
		c := &cases[k]
		peers, peerAddrs, netns, listen := probers[:c.peers], addrs[:c.peers], "", "127.0.0.1:0"
		if c.netns {
			fabric, err := newNetnsFabric(ctx, c.peers)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("bench probe %s: not measured: %v", c.name(), err))
				continue
			}
			defer fabric.Close()
			peers, peerAddrs = fabric.probers, fabric.addrs
			netns, listen = string(fabric.ns(0)), netip.AddrPortFrom(fabric.agentAddr, 0).String()
		}
		file := filepath.Join(dir, fmt.Sprintf("peers-%d", k))
		if err := os.WriteFile(file, []byte(strings.Join(peerAddrs, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		for run := range prRuns {
			modes := []string{"noop", "probe"}
			if run%2 == 1 {
				modes = []string{"probe", "noop"}
			}
			for _, mode := range modes {
				r, err := runAgent(ctx, agentAt{netns: netns, listen: listen}, mode, file, peers, c.spread, c.rounds())
				if err != nil {
					return nil, fmt.Errorf("%s, %s run %d: %w", c.name(), mode, run+1, err)
				}
				if verbose {
					fmt.Fprintf(os.Stderr, "probe %s %s run %d: CPU %s (%s system), VmHWM %d KiB (wait4's maxrss %d KiB), rounds %v\n",
						c.name(), mode, run+1, r.cpu, r.sys, r.hwmKiB, r.maxrssKiB, r.elapsed())
				}
				if mode == "noop" {
					c.noop = append(c.noop, r)
					noops = append(noops, r)
				} else {
					c.probe = append(c.probe, r)
				}
			}
		}
	}
	lines := []string{fmt.Sprintf("bench probe no-op: agent process opening its socket and serving, probing nothing, %s x %d runs: "+
		"CPU %s ms per run (start to exit), peak RSS %s MiB (min/median/max)",
		prLife, len(noops), mmm(noops, func(r agentRun) float64 { return float64(r.cpu) / 1e6 }), mmm(noops, hwmMiB))}
	for _, c := range cases {
		if len(c.probe) > 0 {
			lines = append(lines, c.line())
		}
	}
	lines = append(lines, skipped...)
	return append(lines, modelLine(cases)), nil
}

// agentRun is one agent process as measured.
type agentRun struct {
	cpu    time.Duration // the process's user + system time, start to exit
	sys    time.Duration // of which system
	hwmKiB int64         // its peak RSS (VmHWM)
	// maxrssKiB is wait4's ru_maxrss, for comparison only: Go starts a child with
	// CLONE_VM|CLONE_VFORK, and exec folds the parent's peak into the child's.
	maxrssKiB int64
	rounds    []agentMsg
	// inbound is the probes the peers sent the agent over all rounds, each answered by the agent.
	inbound uint64
}

func (r agentRun) elapsed() []time.Duration {
	var out []time.Duration
	for _, m := range r.rounds {
		out = append(out, m.Elapsed.Round(time.Millisecond))
	}
	return out
}

func cpuPerRoundMs(r agentRun) float64 { return float64(r.cpu) / float64(len(r.rounds)) / 1e6 }
func hwmMiB(r agentRun) float64        { return float64(r.hwmKiB) / 1024 }

// runAgent runs one agent process in mode over the peers in file, probers being those peers, for
// rounds rounds of spread; in mode probe the peers probe the agent during each round, spread as its
// own probes are. Every path must pass: loopback, or one bridge.
func runAgent(ctx context.Context, at agentAt, mode, file string, probers []*nodeagent.Prober, spread time.Duration, rounds int) (agentRun, error) {
	args := []string{os.Args[0], agentCommand, "-mode=" + mode, "-peers=" + file,
		fmt.Sprintf("-mtu=%d", prMTU), "-spread=" + spread.String(), "-listen=" + at.listen}
	if at.netns != "" {
		// ip netns exec execs the agent in place: the process measured is the agent's.
		args = append([]string{"ip", "netns", "exec", at.netns}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return agentRun{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return agentRun{}, err
	}
	if err := cmd.Start(); err != nil {
		return agentRun{}, err
	}
	defer cmd.Wait() //nolint:errcheck // after a failure: only reap it
	defer in.Close()
	out := json.NewDecoder(stdout)
	var ready agentMsg
	if err := out.Decode(&ready); err != nil {
		return agentRun{}, fmt.Errorf("the agent's address: %w", err)
	}
	agent, err := netip.ParseAddrPort(ready.Addr)
	if err != nil {
		return agentRun{}, err
	}
	var run agentRun
	for range rounds {
		if _, err := fmt.Fprintln(in, "round"); err != nil {
			return agentRun{}, err
		}
		var wg sync.WaitGroup
		var sent uint64
		var failed []string
		if mode == "probe" {
			wg.Go(func() { sent, failed = probeFrom(ctx, probers, agent, spread) })
		}
		var m agentMsg
		err := out.Decode(&m)
		wg.Wait()
		if err != nil {
			return agentRun{}, fmt.Errorf("the agent's round: %w", err)
		}
		if len(m.Failed) > 0 || len(failed) > 0 {
			return agentRun{}, fmt.Errorf("paths failed on loopback: the agent's %d (%s), the peers' %d (%s)",
				len(m.Failed), firstFew(m.Failed), len(failed), firstFew(failed))
		}
		run.rounds = append(run.rounds, m)
		run.inbound += sent
	}
	in.Close()
	var last agentMsg
	if err := out.Decode(&last); err != nil {
		return agentRun{}, fmt.Errorf("the agent's peak RSS: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return agentRun{}, err
	}
	run.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	run.hwmKiB = last.HWMKiB
	run.sys = cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.maxrssKiB = ru.Maxrss
	}
	return run, nil
}

// agentAt is where the agent process runs: in network namespace netns ("": this one), its socket
// on listen.
type agentAt struct{ netns, listen string }

// probeFrom has every prober check target once, the checks started evenly over spread (as
// Prober.Round does), and returns the probes they sent and the checks that failed.
func probeFrom(ctx context.Context, probers []*nodeagent.Prober, target netip.AddrPort, spread time.Duration) (uint64, []string) {
	sent0 := make([]uint64, len(probers))
	for i, p := range probers {
		sent0[i] = p.Sent.Load()
	}
	results := make([]nodeagent.Result, len(probers))
	gap := spread / time.Duration(len(probers))
	start := time.Now()
	var wg sync.WaitGroup
	for i, p := range probers {
		if wait := time.Until(start.Add(time.Duration(i) * gap)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Go(func() { results[i] = p.Check(ctx, nodeagent.Peer{Node: fmt.Sprintf("peer-%04d", i), Addr: target}) })
	}
	wg.Wait()
	var sent uint64
	var failed []string
	for i, p := range probers {
		sent += p.Sent.Load() - sent0[i]
		if r := results[i]; r.Reason != "" {
			failed = append(failed, r.Node+" "+r.Reason)
		}
	}
	return sent, failed
}

func firstFew(s []string) string {
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + ", ..."
	}
	return strings.Join(s, ", ")
}

// probeCase is one case's runs, the no-op's paired with the agent's by index.
type probeCase struct {
	peers  int
	spread time.Duration
	// netns: the agent and each peer in a network namespace of their own on one bridge
	// (netnsFabric) instead of on loopback.
	netns       bool
	noop, probe []agentRun
}

func (c probeCase) name() string {
	if c.netns {
		return fmt.Sprintf("%d peers in network namespaces over %s", c.peers, c.spread)
	}
	return fmt.Sprintf("%d peers over %s", c.peers, c.spread)
}
func (c probeCase) rounds() int { return max(int(prLife/c.spread), 1) }

// perPeerUs is each run's CPU per round above its paired no-op's, per peer, in µs.
func (c probeCase) perPeerUs() []float64 {
	out := make([]float64, len(c.probe))
	for i := range c.probe {
		out[i] = (cpuPerRoundMs(c.probe[i]) - cpuPerRoundMs(c.noop[i])) * 1e3 / float64(c.peers)
	}
	return out
}

// pairedMedian is the median over the runs of f(probe run) / f(its no-op run).
func (c probeCase) pairedMedian(f func(agentRun) float64) float64 {
	v := make([]float64, len(c.probe))
	for i := range c.probe {
		v[i] = f(c.probe[i]) / f(c.noop[i])
	}
	return median(v)
}

func (c probeCase) line() string {
	var sent, answered uint64
	var elapsed []time.Duration
	var rate []float64
	for _, r := range c.probe {
		for _, m := range r.rounds {
			sent += m.Sent
			answered += 2 * uint64(m.Healthy)
			elapsed = append(elapsed, m.Elapsed)
			rate = append(rate, float64(m.Sent)/m.Elapsed.Seconds())
		}
		sent += r.inbound
	}
	rounds := float64(len(elapsed))
	// Every path passed (runAgent), so each of the agent's checks and each of the peers' had both
	// exchanges answered: per round 2 × peers probes and as many answers each way. A probe beyond
	// those was sent again after one was lost (or its answer was) and waited --timeout.
	answered += uint64(2*c.peers) * uint64(len(elapsed))
	// answered probes, both directions: the agent sends (and receives) one probe or answer for each
	exchanges := float64(answered) / rounds
	resent := float64(sent-answered) / rounds
	slices.Sort(elapsed)
	var sys []float64
	for _, r := range c.probe {
		sys = append(sys, float64(r.sys)/float64(r.cpu)*100)
	}
	return fmt.Sprintf("bench probe %s: per round 2 probes to each peer (%d B and %d B payload, MTU %d) and the answers to each peer's 2, "+
		"%d rounds x %d runs: CPU %s ms per round (%.0f%% system), %s µs per peer over the no-op, peak RSS %s MiB (min/median/max); "+
		"packets per round %.0f sent / %.0f received (model %d / %d), %.1f probes lost and re-sent; round %s/%s/%s, %.0f probes/s sent; "+
		"ratio vs the no-op: CPU %.2fx, peak RSS %.2fx (medians of %d paired runs)",
		c.name(), headerLen, prMTU-ipv4UDP, prMTU, c.rounds(), len(c.probe),
		mmm(c.probe, cpuPerRoundMs), median(sys), mmmOf(c.perPeerUs(), "%.0f"), mmm(c.probe, hwmMiB),
		exchanges, exchanges, 4*c.peers, 4*c.peers, resent,
		elapsed[0].Round(time.Millisecond), elapsed[len(elapsed)/2].Round(time.Millisecond), elapsed[len(elapsed)-1].Round(time.Millisecond),
		median(rate), c.pairedMedian(cpuPerRoundMs), c.pairedMedian(hwmMiB), len(c.probe))
}

// modelLine is the model at the agent's defaults for prModelNodes, its CPU per round the slower
// 100-peer case's median CPU per peer times the peers (a check every 20 ms: nearest the defaults'
// 10 ms at --max-rate to 150 ms at 100 nodes), and its two checks against the measurements:
// at one rate, the 1,000-peer case's CPU per round against its no-op's plus 1,000 times the
// 100-peer case's CPU per peer at that rate (min to max of its runs) — linear in the peers; and
// the CPU per peer of the two 100-peer cases — what the rate does.
func modelLine(cases []probeCase) string {
	slow, fast, large := cases[0], cases[1], cases[2] // prCases
	// The CPU per peer comes from real namespaces when they were measured (cases[3]), else from
	// loopback.
	source := slow
	ns, inNS := probeCase{}, len(cases) > 3 && len(cases[3].probe) > 0
	if inNS {
		ns = cases[3]
		source = ns
	}
	perPeer := median(source.perPeerUs())
	var parts []string
	for _, n := range prModelNodes {
		l := probeModel(n-1, prInterval, prTimeout, prTries, prMaxRate, prMTU)
		cpu := perPeer * float64(n-1) / 1e3 // ms per round
		parts = append(parts, fmt.Sprintf("%d nodes: spread %s, a round every %s, %.0f probes/s, %.0f pkt/s and %.2f Mbit/s each way, CPU %.0f ms per round (%.2f%% of a core)",
			n, l.spread.Round(100*time.Millisecond), l.period.Round(100*time.Millisecond), l.probesPerSec, l.pktsPerSec, l.bitsPerSec/1e6,
			cpu, cpu/1e3/l.period.Seconds()*100))
	}
	pp := fast.perPeerUs()
	lo, hi, measured, verdict := predicted(large, pp)
	line := fmt.Sprintf("bench probe model: defaults --interval=%s --timeout=%s --tries=%d --max-rate=%.0f, MTU %d, per node, CPU %.0f µs per peer (%s): %s; "+
		"check, linear in peers at one rate: %s predict %.0f-%.0f ms CPU per round for %s, measured %s (min/median/max): %s; "+
		"rate: a check every %s costs %.2fx the CPU of one every %s (%s)",
		prInterval, prTimeout, prTries, prMaxRate, prMTU, perPeer, source.name(), strings.Join(parts, "; "),
		fast.name(), lo, hi, large.name(), mmmOf(measured, "%.0f"), verdict,
		slow.spread/time.Duration(slow.peers), median(slow.perPeerUs())/median(pp), fast.spread/time.Duration(fast.peers), fast.name())
	if inNS {
		lo, hi, measured, verdict := predicted(ns, slow.perPeerUs())
		line += fmt.Sprintf("; check, loopback against real namespaces: %s predict %.0f-%.0f ms CPU per round for %s, measured %s: %s "+
			"(a peer costs %.2fx in namespaces)", slow.name(), lo, hi, ns.name(), mmmOf(measured, "%.0f"), verdict,
			median(ns.perPeerUs())/median(slow.perPeerUs()))
	}
	return line
}

// predicted is the CPU per round c's no-op runs plus c.peers times perPeerUs predict (the range
// over perPeerUs), c's measured CPU per round, and whether they agree.
func predicted(c probeCase, perPeerUs []float64) (lo, hi float64, measured []float64, verdict string) {
	base := median(values(c.noop, cpuPerRoundMs))
	lo, hi = base+slices.Min(perPeerUs)*float64(c.peers)/1e3, base+slices.Max(perPeerUs)*float64(c.peers)/1e3
	measured = values(c.probe, cpuPerRoundMs)
	verdict = "agrees (the ranges overlap)"
	switch m := median(measured); {
	case lo > slices.Max(measured):
		verdict = fmt.Sprintf("OVER-estimates (%.2fx the measured median)", (lo+hi)/2/m)
	case hi < slices.Min(measured):
		verdict = fmt.Sprintf("UNDER-estimates (%.2fx the measured median)", (lo+hi)/2/m)
	}
	return lo, hi, measured, verdict
}

// prLoad is what one node's agent does with the given settings.
type prLoad struct {
	spread time.Duration // a round's probes spread over this long
	period time.Duration // a round starts this often
	// probesPerSec is the rate of probes during a round (what --max-rate bounds); pktsPerSec and
	// bitsPerSec (IP packets, headers included) are sent, and as many received, averaged over a
	// period.
	probesPerSec, pktsPerSec, bitsPerSec float64
}

// probeModel is the load of an agent with peers peers, every path healthy, IPv4: per peer and
// round it sends a small probe (40-byte payload) and a full-size one (a frame of mtu bytes) and
// answers the peer's two with 40-byte replies, and receives as much. Its spread is the agent's
// (Agent.spread in netcontroller/probe): the interval less the last check's budget
// ((tries+2) × timeout), or longer when 2 × peers probes would exceed maxRate a second; a round
// starts every interval, or right after a round longer than that.
func probeModel(peers int, interval, timeout time.Duration, tries int, maxRate float64, mtu int) prLoad {
	spread := max(interval-time.Duration(tries+2)*timeout, 0)
	if maxRate > 0 {
		spread = max(spread, time.Duration(float64(2*peers)/maxRate*float64(time.Second)))
	}
	l := prLoad{spread: spread, period: max(interval, spread)}
	if peers == 0 {
		return l
	}
	bytesPerPeer := mtu + 3*(headerLen+ipv4UDP)
	l.probesPerSec = float64(2*peers) / spread.Seconds()
	l.pktsPerSec = float64(4*peers) / l.period.Seconds()
	l.bitsPerSec = float64(8*bytesPerPeer*peers) / l.period.Seconds()
	return l
}

func values(runs []agentRun, f func(agentRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// mmm is min/median/max of f over runs.
func mmm(runs []agentRun, f func(agentRun) float64) string { return mmmOf(values(runs, f), "%.1f") }

func mmmOf(v []float64, format string) string {
	s := slices.Sorted(slices.Values(v))
	return fmt.Sprintf(format+"/"+format+"/"+format, s[0], median(s), s[len(s)-1])
}

// median of v (the upper middle for an even count), v left as it is.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
