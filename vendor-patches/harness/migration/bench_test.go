package migration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/node"
	"github.com/migranet/migranet/vendor-patches/harness/qemu"
)

// EnvUpstreamPeer names the upstreampeer binary (run.sh bench builds it).
const EnvUpstreamPeer = "MIGRANET_VP_UPSTREAM_PEER"

const (
	benchSize   = 2 << 30 // bytes per throughput measure
	benchRounds = 3       // throughput measures per path; the median is reported
)

// EnvProfile names a directory: the throughput bench then adds, per path, one
// round with a pprof CPU profile of each proxy node and one with strace -c -f
// attached to every process of the path (sender, proxies, sink), neither
// counted. The files are named <path>-<role>.pprof / .strace.
const EnvProfile = "MIGRANET_VP_PROFILE"

// EnvBenchModes selects the throughput bench's modes by key (comma list, see
// benchModes); all when unset.
const EnvBenchModes = "MIGRANET_VP_BENCH_MODES"

// EnvBenchProcs is the GOMAXPROCS the Go nodes get in the modes that stand for a
// node with cores to spare (default 16, the node the issue measured on).
const EnvBenchProcs = "MIGRANET_VP_BENCH_PROCS"

// benchMode is one way of running the throughput paths on this machine.
type benchMode struct {
	key, name string
	// pinned: each namespace's processes (sender and source proxy or relay;
	// target proxy or relay and sink) confined to a CPU of its own (taskset).
	pinned bool
	// kernel: near-free endpoints (node/kernel.go): the proxies measured alone.
	kernel bool
	// spare: GOMAXPROCS of every Go node set to EnvBenchProcs (else the
	// runtime's default, which follows the CPUs the process may use).
	spare bool
}

// benchModes: the shared cores of CI's machine, and two ways of showing on it
// what a node with cores to spare does: per-node CPUs (a node's processes do
// not compete with the other node's) and the proxies alone (endpoints that cost
// next to nothing, so the proxies have the cores), both with the Ps of a big
// node (idle Ps are what a Go program with free cores has).
var benchModes = []benchMode{
	{key: "shared", name: "shared cores"},
	{key: "pernode", name: "per-node CPUs", pinned: true, spare: true},
	{key: "alone", name: "proxies alone", kernel: true, spare: true},
	{key: "alone-pernode", name: "proxies alone, per-node CPUs", pinned: true, kernel: true, spare: true},
}

func selectedModes(b *testing.B) []benchMode {
	sel := os.Getenv(EnvBenchModes)
	if sel == "" {
		return benchModes
	}
	var out []benchMode
	for _, k := range strings.Split(sel, ",") {
		found := false
		for _, m := range benchModes {
			if m.key == strings.TrimSpace(k) {
				out, found = append(out, m), true
			}
		}
		if !found {
			b.Fatalf("%s: unknown mode %q", EnvBenchModes, k)
		}
	}
	return out
}

func benchProcs(b *testing.B) int {
	s := os.Getenv(EnvBenchProcs)
	if s == "" {
		return 16
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", EnvBenchProcs, s)
	}
	return n
}

// BenchmarkProxyThroughput moves 2 GiB over the lab's migration link: one direct
// TCP connection, the floor relay pair, the patched proxy pair, and upstream's
// unpatched proxy pair (the upstreampeer binary), plain and mTLS, rounds
// interleaved, in every mode (benchModes). The sender and the sink run in node
// processes of their own, so each path's CPU time and context switches are known
// per process. The primary figures are the proxies' CPU seconds per GiB and
// context switches per MiB, each with its goal against upstream's pair and the
// floor's measured in the same mode of the same run.
func BenchmarkProxyThroughput(b *testing.B) {
	peer := os.Getenv(EnvUpstreamPeer)
	if peer == "" {
		b.Fatalf("%s is not set: run this through vendor-patches/run.sh bench", EnvUpstreamPeer)
	}
	modes, procs := selectedModes(b), benchProcs(b)
	if runtime.NumCPU() < 2 {
		b.Fatalf("the per-node modes need 2 CPUs, this machine has %d", runtime.NumCPU())
	}
	for i := 0; i < b.N; i++ {
		loadLine("throughput bench start")
		plainLab, tlsLab := newLab(b, false, peer), newLab(b, true, peer)
		summary := []string{}
		for _, m := range modes {
			loadLine("mode " + m.name)
			plain := plainLab.benchPaths(b, m, procs)
			mtls := tlsLab.benchPaths(b, m, procs)
			summary = append(summary, modeLines(b, m, plain, mtls)...)
		}
		loadLine("throughput bench end")
		for _, s := range summary {
			fmt.Println(s)
		}
	}
}

// modeLines prints one mode's figures and returns its goal lines.
func modeLines(b *testing.B, m benchMode, plain, mtls map[string]rounds) []string {
	direct, floor, pat, up := plain["direct"], plain["floor"], plain["patched"], plain["upstream"]
	pre := "bench proxy: [" + m.name + "] "
	line(pre+"plain direct TCP", direct, nil, nil)
	line(pre+"plain floor pair (splicefloor: the cheapest relay pair, not the product)", floor, direct, nil)
	line(pre+"plain upstream pair", up, direct, floor)
	line(pre+"plain patched pair", pat, direct, floor)
	line(pre+"mTLS upstream pair", mtls["upstream"], direct, nil)
	line(pre+"mTLS patched pair", mtls["patched"], direct, nil)
	g := pre + "goals, patched pair"
	var out []string
	goal := func(what string, ok bool, detail string) {
		out = append(out, fmt.Sprintf("%s: %s: %s (%s)", g, what, verdict(ok), detail))
	}
	pc, uc, fc := pat.proxyCPU(), up.proxyCPU(), floor.proxyCPU()
	goal("plain proxies' CPU per GiB <= upstream's", pc <= uc,
		fmt.Sprintf("%.3f s = %.2fx upstream's %.3f s, %.2fx the floor's %.3f s; GOMAXPROCS %s / upstream %s",
			pc, pc/uc, uc, pc/fc, fc, pat.procs(), up.procs()))
	ps, us, fs := pat.proxySwitches(), up.proxySwitches(), floor.proxySwitches()
	goal("plain proxies' context switches per MiB <= upstream's", ps <= us,
		fmt.Sprintf("%.1f = %.2fx upstream's %.1f, %.2fx the floor's %.1f", ps, ps/us, us, ps/fs, fs))
	band := noiseBand(pat, up)
	goal("plain throughput never below upstream's (within the run's noise band)", pat.gibps() >= up.gibps()*(1-band),
		fmt.Sprintf("%.2f GiB/s = %.2fx upstream's %.2f, band %.0f %% (half the wider min-max spread of the two)",
			pat.gibps(), pat.gibps()/up.gibps(), up.gibps(), 100*band))
	d, fl := direct.gibps(), floor.gibps()
	if fl >= 0.95*d {
		goal("plain >= 0.9x direct (the floor reaches 0.95x here)", pat.gibps() >= 0.9*d,
			fmt.Sprintf("%.2fx direct; floor %.2fx direct", pat.gibps()/d, fl/d))
	} else {
		out = append(out, fmt.Sprintf("%s: plain >= 0.9x direct: not applicable in this mode (the floor pair reaches %.2fx direct, the goal holds where it reaches 0.95x); patched %.2fx direct, %.2fx the floor",
			g, fl/d, pat.gibps()/d, pat.gibps()/fl))
	}
	mp, mu := mtls["patched"], mtls["upstream"]
	goal("mTLS proxies' CPU per GiB <= upstream's", mp.proxyCPU() <= mu.proxyCPU(),
		fmt.Sprintf("%.3f s = %.2fx upstream's %.3f s", mp.proxyCPU(), mp.proxyCPU()/mu.proxyCPU(), mu.proxyCPU()))
	goal("mTLS proxies' context switches per MiB <= upstream's", mp.proxySwitches() <= mu.proxySwitches(),
		fmt.Sprintf("%.1f = %.2fx upstream's %.1f", mp.proxySwitches(), mp.proxySwitches()/mu.proxySwitches(), mu.proxySwitches()))
	goal("mTLS >= 1.5x upstream's throughput", mp.gibps() >= 1.5*mu.gibps(),
		fmt.Sprintf("%.2f / %.2f GiB/s = %.2fx", mp.gibps(), mu.gibps(), mp.gibps()/mu.gibps()))
	key := strings.ReplaceAll(m.key, "-", "")
	b.ReportMetric(pc/uc, key+"-plain-cpu-patched/upstream")
	b.ReportMetric(ps/us, key+"-plain-switches-patched/upstream")
	b.ReportMetric(pat.gibps()/up.gibps(), key+"-plain-patched/upstream")
	b.ReportMetric(mp.gibps()/mu.gibps(), key+"-mtls-patched/upstream")
	return out
}

// noiseBand is half the wider relative min-max spread of two paths' rounds: a
// difference of medians within it is not told apart from the machine's noise.
func noiseBand(x, y rounds) float64 {
	spread := func(r rounds) float64 {
		g := r.pick(func(v round) float64 { return v.gibps })
		sort.Float64s(g)
		return (g[len(g)-1] - g[0]) / median(g)
	}
	return max(spread(x), spread(y)) / 2
}

// rounds are one path's measures.
type rounds []round

// round is one 2 GiB stream: GiB/s, and the CPU seconds per GiB of its
// endpoints (sender + sink processes) and of its proxies (both proxy processes),
// the context switches per MiB of each, and the proxies' GOMAXPROCS (0: not Go).
type round struct {
	gibps, endpoints, proxies       float64
	endpointSwitches, proxySwitches float64
	procs                           []int
}

func (r rounds) pick(f func(round) float64) []float64 {
	v := make([]float64, len(r))
	for i, x := range r {
		v[i] = f(x)
	}
	return v
}

func (r rounds) gibps() float64 { return median(r.pick(func(x round) float64 { return x.gibps })) }

// pathCPU is the median CPU seconds per GiB of every process on the path.
func (r rounds) pathCPU() float64 {
	return median(r.pick(func(x round) float64 { return x.endpoints + x.proxies }))
}

func (r rounds) proxyCPU() float64 { return median(r.pick(func(x round) float64 { return x.proxies })) }

func (r rounds) proxySwitches() float64 {
	return median(r.pick(func(x round) float64 { return x.proxySwitches }))
}

// procs is the proxies' GOMAXPROCS as seen in the rounds ("n/a" for a path
// without proxies or with C relays).
func (r rounds) procs() string {
	seen := map[string]bool{}
	var out []string
	for _, x := range r {
		for _, p := range x.procs {
			s := "n/a (C relay)"
			if p > 0 {
				s = strconv.Itoa(p)
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return "n/a"
	}
	return strings.Join(out, ",")
}

// lab is one throughput lab: the patched proxies (e.source, e.target), upstream's
// (up), and the endpoint nodes that send and sink the streams.
type lab struct {
	*env
	withTLS        bool
	up             [2]*node.Client
	sender, sinker *node.Client
	mode           benchMode
}

func newLab(b *testing.B, withTLS bool, peer string) *lab {
	e := newEnv(b, withTLS)
	l := &lab{env: e, withTLS: withTLS, up: e.spawnUpstream(b, peer)}
	l.sender, l.sinker = e.spawnPlain(b, e.lab.Source), e.spawnPlain(b, e.lab.Target)
	return l
}

// benchPaths measures every path of the lab benchRounds times in mode m.
func (l *lab) benchPaths(b *testing.B, m benchMode, procs int) map[string]rounds {
	l.mode = m
	p := 0
	if m.spare {
		p = procs
	}
	for _, c := range []*node.Client{l.source, l.target, l.up[0], l.up[1], l.sender, l.sinker} {
		if _, err := c.Do(node.Request{Op: "procs", Procs: p}); err != nil {
			b.Fatal(err)
		}
	}
	paths := []string{"patched", "upstream"}
	if !l.withTLS {
		// The floor relay splices plain streams only.
		paths = append([]string{"direct", "floor"}, paths...)
	}
	if dir := os.Getenv(EnvProfile); dir != "" {
		for _, p := range paths {
			if p != "direct" {
				l.profile(b, dir, p, l.withTLS)
			}
		}
	}
	out := map[string]rounds{}
	for r := 0; r < benchRounds; r++ {
		for _, p := range paths {
			out[p] = append(out[p], l.measure(b, p, fmt.Sprintf("%s-%s-%v-%d", p, m.key, l.withTLS, r), nil))
		}
	}
	return out
}

// proxies are the proxy nodes of path (none for direct).
func (l *lab) proxies(path string) []*node.Client {
	switch path {
	case "patched":
		return []*node.Client{l.source, l.target}
	case "upstream":
		return l.up[:]
	}
	return nil
}

// confine applies the mode's CPUs to the path's processes (sender, sink, then
// the source and the target proxy or relay): in the per-node modes the source
// namespace's on CPU 0 and the target namespace's on CPU 1, else every CPU.
func (l *lab) confine(b *testing.B, procs []meter) {
	all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	for i, p := range procs {
		cpus := all
		if l.mode.pinned {
			cpus = strconv.Itoa(i % 2) // 0 sender, 1 sink, 2 source proxy, 3 target proxy
		}
		if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(p.pid(b))).CombinedOutput(); err != nil {
			b.Fatalf("taskset -a -p -c %s %d: %v: %s", cpus, p.pid(b), err, out)
		}
	}
}

// measure streams benchSize bytes over path and reads every process's CPU time
// before and after. during, when set, runs once the stream has started, is
// given the path's processes (sender, sink, then the source and the target
// proxy or relay) and returns a function to call when it has ended (the
// profile rounds).
func (l *lab) measure(b *testing.B, path, key string, profiled func(procs []meter) func()) round {
	procs := []meter{nodeMeter{l.sender}, nodeMeter{l.sinker}}
	var during func() func()
	if profiled != nil {
		during = func() func() { return profiled(procs) }
	}
	var stream func() float64
	switch path {
	case "direct":
		stream = func() float64 { return l.direct(b, key, during) }
	case "floor":
		dir, err := os.MkdirTemp("", "vpf")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		sinkPath := filepath.Join(dir, key+"-49152")
		f := l.startFloorPair(b, dir, sinkPath)
		defer f.close()
		procs = append(procs, f.meters()...)
		stream = func() float64 { return l.floored(b, f, sinkPath, key, during) }
	default:
		p := l.proxies(path)
		procs = append(procs, nodeMeters(p)...)
		stream = func() float64 { return l.proxied(b, p[0], p[1], key, during) }
	}
	l.confine(b, procs)
	before, swBefore := cpuOf(b, procs)
	gibps := stream()
	after, swAfter := cpuOf(b, procs)
	perGiB := func(i int) float64 { return (after[i] - before[i]) / (float64(benchSize) / (1 << 30)) }
	swPerMiB := func(i int) float64 { return (swAfter[i] - swBefore[i]) / (float64(benchSize) / (1 << 20)) }
	r := round{gibps: gibps, endpoints: perGiB(0) + perGiB(1), endpointSwitches: swPerMiB(0) + swPerMiB(1)}
	for i := 2; i < len(procs); i++ {
		r.proxies += perGiB(i)
		r.proxySwitches += swPerMiB(i)
		r.procs = append(r.procs, procsOf(b, procs[i]))
	}
	return r
}

// procsOf is a node's GOMAXPROCS, 0 for a floor relay.
func procsOf(b testing.TB, m meter) int {
	n, ok := m.(nodeMeter)
	if !ok {
		return 0
	}
	r, err := n.c.Do(node.Request{Op: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	return r.Procs
}

// cpuOf reads the CPU seconds and the context switches of each process so far.
func cpuOf(b testing.TB, procs []meter) (cpu, switches []float64) {
	cpu, switches = make([]float64, len(procs)), make([]float64, len(procs))
	for i, p := range procs {
		cpu[i], switches[i] = p.usage(b)
	}
	return cpu, switches
}

// profile runs uncounted rounds of path: one with a pprof CPU profile of each
// proxy node (not for the floor's relays, which are not Go), then one with
// strace -c -f and one with perf attached to every process of the path.
func (l *lab) profile(b *testing.B, dir, path string, withTLS bool) {
	name := l.mode.key + "-" + path + map[bool]string{false: "-plain", true: "-mtls"}[withTLS]
	roles := []string{"sender", "sink", "source-proxy", "target-proxy"}
	if path == "floor" {
		roles[2], roles[3] = "source-relay", "target-relay"
	} else {
		l.measure(b, path, name+"-pprof", func(procs []meter) func() {
			for i, p := range procs[2:] {
				if _, err := p.(nodeMeter).c.Do(node.Request{Op: "pprof-start", Path: filepath.Join(dir, name+"-"+roles[2+i]+".pprof")}); err != nil {
					b.Fatal(err)
				}
			}
			return func() {
				for _, p := range procs[2:] {
					if _, err := p.(nodeMeter).c.Do(node.Request{Op: "pprof-stop"}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	// tool runs one uncounted round with the commands argv(role, pid) attached.
	tool := func(bin, suffix string, argv func(role, pid string) [][]string) {
		if _, err := exec.LookPath(bin); err != nil {
			b.Logf("no %s on PATH: no %s files", bin, suffix)
			return
		}
		r := l.measure(b, path, name+"-"+suffix, func(procs []meter) func() {
			var cmds []*exec.Cmd
			for i, p := range procs {
				for _, a := range argv(roles[i], strconv.Itoa(p.pid(b))) {
					cmd := exec.Command(a[0], a[1:]...)
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					cmds = append(cmds, cmd)
				}
			}
			return func() {
				for _, cmd := range cmds {
					_ = cmd.Process.Signal(os.Interrupt)
					_ = cmd.Wait()
				}
			}
		})
		b.Logf("profile %s: %s round %.2f GiB/s", name, suffix, r.gibps)
	}
	tool("strace", "strace", func(role, pid string) [][]string {
		return [][]string{{"strace", "-c", "-f", "-o", filepath.Join(dir, name+"-"+role+".strace"), "-p", pid}}
	})
	// perf: the kernel's share, sampled on the software clock (no hardware
	// counters needed), one file per process.
	tool("perf", "perf", func(role, pid string) [][]string {
		return [][]string{{"perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", filepath.Join(dir, name+"-"+role+".perf.data"), "-p", pid}}
	})
}

// spawnPlain starts a node of this binary in namespace ns with no proxy manager:
// the sender or sink of the throughput streams.
func (e *env) spawnPlain(b *testing.B, ns string) *node.Client {
	c, err := node.Spawn(ns)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// spawnUpstream starts the upstream peer as source and target nodes of the lab,
// with the same PKI as the patched nodes.
func (e *env) spawnUpstream(b *testing.B, peer string) [2]*node.Client {
	var up [2]*node.Client
	for i, n := range []struct{ ns, bind string }{{e.lab.Source, e.lab.SourceMig}, {e.lab.Target, e.lab.TargetMig}} {
		c, err := node.SpawnBinary(n.ns, peer)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		if _, err := c.Do(node.Request{Op: "init", Bind: n.bind, PKI: e.pki}); err != nil {
			b.Fatalf("upstream peer: %v", err)
		}
		up[i] = c
	}
	return up
}

// direct is one TCP connection from the source to the target namespace.
func (l *lab) direct(b *testing.B, key string, during func() func()) float64 {
	r, err := l.sinker.Do(node.Request{Op: "sink", Key: key, Network: "tcp", Addr: net.JoinHostPort(l.lab.TargetMig, "0"), Size: benchSize, Kernel: l.mode.kernel})
	if err != nil {
		b.Fatal(err)
	}
	var end func()
	if during != nil {
		end = during()
	}
	s, err := l.sender.Do(node.Request{Op: "send", Network: "tcp", Addr: net.JoinHostPort(l.lab.TargetMig, strconv.Itoa(r.Ports["sink"])), Size: benchSize, Kernel: l.mode.kernel})
	if err != nil {
		b.Fatal(err)
	}
	return finish(b, l.sinker, key, s.Start, end)
}

// proxied streams through a source proxy on src and a target proxy on dst,
// unix socket -> TCP over the migration link -> unix socket.
func (l *lab) proxied(b *testing.B, src, dst *node.Client, key string, during func() func()) float64 {
	dir, err := os.MkdirTemp("", "vpb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sinkPath := filepath.Join(dir, key+"-49152")
	if _, err := l.sinker.Do(node.Request{Op: "sink", Key: key, Network: "unix", Addr: sinkPath, Size: benchSize, Kernel: l.mode.kernel}); err != nil {
		b.Fatal(err)
	}
	r, err := dst.Do(node.Request{Op: "start-target", Key: key, Sockets: []string{sinkPath}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = dst.Do(node.Request{Op: "stop", Key: key}) }()
	sr, err := src.Do(node.Request{Op: "start-source", Key: key, Addr: l.lab.TargetMig, Ports: r.Ports, Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = src.Do(node.Request{Op: "stop", Key: key}) }()
	if len(sr.Files) != 1 {
		b.Fatalf("source proxy files %v", sr.Files)
	}
	var end func()
	if during != nil {
		end = during()
	}
	s, err := l.sender.Do(node.Request{Op: "send", Network: "unix", Addr: sr.Files[0], Size: benchSize, Kernel: l.mode.kernel})
	if err != nil {
		b.Fatal(err)
	}
	return finish(b, l.sinker, key, s.Start, end)
}

// finish waits (at most 3 minutes) for the sink, calls end (when set) and
// returns GiB/s.
func finish(b *testing.B, sinkNode *node.Client, key string, start int64, end func()) float64 {
	if end != nil {
		defer end()
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		w, err := sinkNode.Do(node.Request{Op: "sinkwait", Key: key})
		if err != nil {
			b.Fatalf("%s: %v", key, err)
		}
		if w.Done {
			secs := time.Duration(w.End - start).Seconds()
			if secs <= 0 {
				b.Fatalf("%s: sink ended before the send started", key)
			}
			return float64(w.Received) / secs / (1 << 30)
		}
	}
	b.Fatalf("%s: sink not done after 3 minutes", key)
	return 0
}

// benchGuest is the QEMU bench's guest: 1 GiB of random RAM, 128 MiB/s dirtied
// steadily over a 512 MiB window.
var benchGuest = qemu.Paced{MemBytes: 1 << 30, DirtyStart: 64 << 20, DirtyBytes: 512 << 20, DirtyMiBps: 128}

// qemuRun is one bench migration as QMP's query-migrate reported it, and the
// CPU seconds it cost QEMU (both processes, vCPU threads left out) and the two
// proxies.
type qemuRun struct {
	totalMs, downtimeMs float64
	transferred         int64
	qemuCPU, proxyCPU   float64
	proxySwitches       float64 // context switches of both proxies or relays
	procs               []int   // the proxies' GOMAXPROCS (0: C relay)
}

func (r qemuRun) gib() float64 { return float64(r.transferred) / (1 << 30) }

type qemuRuns []qemuRun

func (q qemuRuns) pick(f func(qemuRun) float64) []float64 {
	v := make([]float64, len(q))
	for i, x := range q {
		v[i] = f(x)
	}
	return v
}

// BenchmarkQEMUMigration migrates the 1 GiB dirtying guest (benchGuest)
// directly over the migration link (TCP), through the patched proxy pair and
// through upstream's, single stream and with multifd (4 channels, KubeVirt's
// parallel migration connections), runs interleaved. Every migration's guest
// memory is compared (qemu.Migrate).
func BenchmarkQEMUMigration(b *testing.B) {
	peer := os.Getenv(EnvUpstreamPeer)
	if peer == "" {
		b.Fatalf("%s is not set: run this through vendor-patches/run.sh bench", EnvUpstreamPeer)
	}
	for i := 0; i < b.N; i++ {
		e := newEnv(b, false)
		up := e.spawnUpstream(b, peer)
		dir, err := os.MkdirTemp("", "vpbguest")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		a, err := qemu.BuildPaced(dir, benchGuest)
		if err != nil {
			b.Fatal(err)
		}
		loadLine("qemu bench start")
		for _, mfd := range qemuBenchChannels(b) {
			runs := map[string]qemuRuns{}
			failed := map[string][]string{}
			for r := 0; r < qemuBenchRuns(b); r++ {
				for _, path := range []string{"direct", "floor", "patched", "upstream"} {
					run, err := e.qemuOnce(b, a, path, up, mfd, fmt.Sprintf("vmi-bench-%s-%d-%d", path, mfd, r))
					if err != nil {
						if path == "upstream" && mfd > 0 {
							// Upstream dials each channel in a goroutine of its own:
							// reordered multifd channels fail the migration.
							failed[path] = append(failed[path], err.Error())
							continue
						}
						b.Fatalf("%s migration (multifd %d), run %d: %v", path, mfd, r, err)
					}
					runs[path] = append(runs[path], run)
				}
			}
			mode := "single stream"
			if mfd > 0 {
				mode = fmt.Sprintf("multifd %d channels", mfd)
			}
			direct := runs["direct"]
			qemuLine(b, mode, "direct TCP", direct, direct, nil, "")
			dt := median(direct.pick(func(x qemuRun) float64 { return x.totalMs }))
			ft := median(runs["floor"].pick(func(x qemuRun) float64 { return x.totalMs }))
			for _, path := range []string{"floor", "patched", "upstream"} {
				r := runs[path]
				goal := ""
				if len(r) > 0 {
					mt := median(r.pick(func(x qemuRun) float64 { return x.totalMs }))
					t := mt / dt
					goal = fmt.Sprintf("total time %.2fx direct", t)
					switch path {
					case "floor":
						goal += fmt.Sprintf(" (the goal <= 1.10x is %s)", map[bool]string{true: "within the floor", false: "below the floor: no relay pair reaches it here"}[t <= 1.1])
						b.ReportMetric(t, fmt.Sprintf("qemu-mfd%d-floor/direct", mfd))
					case "patched":
						goal += fmt.Sprintf(" (goal <= 1.10x: %s), %.2fx the floor's", verdict(t <= 1.1), mt/ft)
						b.ReportMetric(t, fmt.Sprintf("qemu-mfd%d-patched/direct", mfd))
					default:
						goal += fmt.Sprintf(", %.2fx the floor's", mt/ft)
					}
				}
				name := path + " pair"
				if path == "floor" {
					name = "floor pair (splicefloor, not the product)"
				}
				qemuLine(b, mode, name, r, direct, failed[path], goal)
			}
			qemuGoals(b, mode, runs["patched"], runs["upstream"], failed["upstream"])
		}
		loadLine("qemu bench end")
	}
}

// qemuGoals prints the patched pair's QEMU goals against upstream's pair of the
// same run: not slower (median total time; with multifd, upstream's failed runs
// count as slower), and no more proxy CPU per GiB nor context switches per MiB.
// Guest memory was compared after every migration (qemu.Migrate).
func qemuGoals(b *testing.B, mode string, pat, up qemuRuns, upFailed []string) {
	pre := fmt.Sprintf("bench proxy: qemu %s, goals, patched pair", mode)
	if len(pat) == 0 || len(up) == 0 {
		fmt.Printf("%s: not judged (patched %d runs, upstream %d runs completed)\n", pre, len(pat), len(up))
		return
	}
	t := func(q qemuRuns) float64 { return median(q.pick(func(x qemuRun) float64 { return x.totalMs })) }
	cpu := func(q qemuRuns) float64 {
		return median(q.pick(func(x qemuRun) float64 { return x.proxyCPU / x.gib() }))
	}
	sw := func(q qemuRuns) float64 {
		return median(q.pick(func(x qemuRun) float64 { return x.proxySwitches / float64(x.transferred) * (1 << 20) }))
	}
	fmt.Printf("%s: total time <= upstream's: %s (%.2f / %.2f s = %.2fx; upstream failed %d of %d; guest memory intact in every run)\n",
		pre, verdict(t(pat) <= t(up)), t(pat)/1000, t(up)/1000, t(pat)/t(up), len(upFailed), len(upFailed)+len(up))
	fmt.Printf("%s: proxies' CPU per GiB <= upstream's: %s (%.3f / %.3f s = %.2fx)\n", pre, verdict(cpu(pat) <= cpu(up)), cpu(pat), cpu(up), cpu(pat)/cpu(up))
	fmt.Printf("%s: proxies' context switches per MiB <= upstream's: %s (%.1f / %.1f = %.2fx)\n", pre, verdict(sw(pat) <= sw(up)), sw(pat), sw(up), sw(pat)/sw(up))
	b.ReportMetric(t(pat)/t(up), strings.ReplaceAll(mode, " ", "-")+"-qemu-patched/upstream")
}

// EnvQEMURuns is how many migrations of each path and mode the QEMU bench runs
// (default 3); EnvQEMUChannels which multifd channel counts it runs (comma list,
// 0 = single stream; default "0,4").
const (
	EnvQEMURuns     = "MIGRANET_VP_BENCH_QEMU_RUNS"
	EnvQEMUChannels = "MIGRANET_VP_BENCH_QEMU_CHANNELS"
)

func qemuBenchRuns(b *testing.B) int {
	n, err := strconv.Atoi(os.Getenv(EnvQEMURuns))
	if os.Getenv(EnvQEMURuns) == "" {
		return 3
	}
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", EnvQEMURuns, os.Getenv(EnvQEMURuns))
	}
	return n
}

func qemuBenchChannels(b *testing.B) []int {
	s := os.Getenv(EnvQEMUChannels)
	if s == "" {
		return []int{0, 4}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n == 1 {
			b.Fatalf("%s=%q: want channel counts (0 = single stream, or >= 2)", EnvQEMUChannels, s)
		}
		out = append(out, n)
	}
	return out
}

// qemuOnce migrates a fresh pair of guests a over path ("direct", "patched",
// "upstream") and reads the CPU times around it.
func (e *env) qemuOnce(b *testing.B, a *qemu.Assets, path string, up [2]*node.Client, multifd int, key string) (qemuRun, error) {
	o := qemu.Options{Multifd: multifd, MaxBytes: fast, Timeout: 90 * time.Second, MemBytes: a.MemBytes}
	var proxies []meter
	switch path {
	case "patched":
		proxies = nodeMeters([]*node.Client{e.source, e.target})
	case "upstream":
		proxies = nodeMeters(up[:])
	}
	var src, dst *qemu.VM
	var uri string
	if path == "floor" {
		dir, err := os.MkdirTemp("", "vpq")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		src, dst = e.startGuests(b, dir, a, o)
		dstSock := filepath.Join(dir, key+"-49152")
		f := e.startFloorPair(b, dir, dstSock)
		defer f.close()
		proxies = f.meters()
		if err := qemu.Incoming(dst.QMP, "unix:"+dstSock); err != nil {
			b.Fatal(err)
		}
		uri = "unix:" + f.Sock
	} else if proxies == nil {
		dir, err := os.MkdirTemp("", "vpq")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		src, dst = e.startGuests(b, dir, a, o)
		e.directPort++
		uri = "tcp:" + net.JoinHostPort(e.lab.TargetMig, strconv.Itoa(49300+e.directPort))
		if err := qemu.Incoming(dst.QMP, uri); err != nil {
			b.Fatal(err)
		}
	} else {
		f := e.prepareOn(b, proxies[0].(nodeMeter).c, proxies[1].(nodeMeter).c, a, key, o)
		f.listen(b)
		src, dst, uri = f.src, f.dst, "unix:"+f.sourceSock
	}
	defer src.Kill()
	defer dst.Kill()
	read := func() (q, p, sw float64) {
		for _, vm := range []*qemu.VM{src, dst} {
			c, err := qemu.MigrationCPU(vm.PID())
			if err != nil {
				b.Fatal(err)
			}
			q += c
		}
		cpu, switches := cpuOf(b, proxies)
		for i, c := range cpu {
			p += c
			sw += switches[i]
		}
		return q, p, sw
	}
	var procs []int
	for _, m := range proxies {
		procs = append(procs, procsOf(b, m))
	}
	q0, p0, s0 := read()
	var q1, p1, s1 float64
	o.Landed = func() { q1, p1, s1 = read() }
	info, _, err := qemu.Migrate(src.QMP, dst.QMP, uri, o)
	if err != nil {
		return qemuRun{}, fmt.Errorf("%v (%s, %d bytes)", err, info.Status, info.RAM.Transferred)
	}
	if info.RAM.DirtySyncCount < 2 {
		b.Fatalf("%s: dirty-sync-count %d: pre-copy did not iterate", key, info.RAM.DirtySyncCount)
	}
	return qemuRun{totalMs: float64(info.TotalTime), downtimeMs: float64(info.Downtime), transferred: info.RAM.Transferred,
		qemuCPU: q1 - q0, proxyCPU: p1 - p0, proxySwitches: s1 - s0, procs: procs}, nil
}

// qemuLine prints one path of the QEMU bench: total time, downtime and bytes
// transferred (min/median/max), CPU per GiB transferred against the direct
// path's, failed runs.
func qemuLine(b *testing.B, mode, path string, r, direct qemuRuns, failed []string, ratio string) {
	b.Helper()
	s := fmt.Sprintf("bench proxy: qemu 1 GiB guest dirtying %d MiB/s, %s, %s: ", benchGuest.DirtyMiBps, mode, path)
	if len(r) == 0 {
		s += "no run completed"
	} else {
		perGiB := func(f func(qemuRun) float64) func(qemuRun) float64 {
			return func(x qemuRun) float64 { return f(x) / x.gib() }
		}
		pathCPU := func(q qemuRuns) float64 {
			return median(q.pick(perGiB(func(x qemuRun) float64 { return x.qemuCPU + x.proxyCPU })))
		}
		s += fmt.Sprintf("total time %s s, downtime %s ms, transferred %s MiB (min / median / max)",
			minMedMax(r.pick(func(x qemuRun) float64 { return x.totalMs / 1000 }), "%.2f"),
			minMedMax(r.pick(func(x qemuRun) float64 { return x.downtimeMs }), "%.0f"),
			minMedMax(r.pick(func(x qemuRun) float64 { return float64(x.transferred) / (1 << 20) }), "%.0f"))
		if ratio != "" {
			s += "; " + ratio
		}
		s += fmt.Sprintf("; CPU per GiB: QEMU %.2f s, proxies %.3f s, whole path %.2f s = %.2fx direct's; proxies' context switches %.1f/MiB",
			median(r.pick(perGiB(func(x qemuRun) float64 { return x.qemuCPU }))),
			median(r.pick(perGiB(func(x qemuRun) float64 { return x.proxyCPU }))),
			pathCPU(r), pathCPU(r)/pathCPU(direct),
			median(r.pick(func(x qemuRun) float64 { return x.proxySwitches / float64(x.transferred) * (1 << 20) })))
		if len(r[0].procs) > 0 {
			s += fmt.Sprintf(", GOMAXPROCS %v", r[0].procs)
		}
	}
	if len(failed) > 0 {
		s += fmt.Sprintf("; %d of %d runs FAILED (first: %s)", len(failed), len(failed)+len(r), failed[0])
	}
	fmt.Println(s)
}

// line prints one throughput measure, primary figures first: the proxies' (or
// relays') CPU seconds per GiB and context switches per MiB with their
// GOMAXPROCS, then GiB/s (median, then min/median/max of the rounds) and the
// ratios against direct and the floor (when given), then the whole path's CPU.
func line(what string, r, direct, floor rounds) {
	s := fmt.Sprintf("%s, 2 GiB: ", what)
	if direct != nil {
		s += fmt.Sprintf("proxies CPU %.3f s/GiB, context switches %.1f/MiB, GOMAXPROCS %s; ", r.proxyCPU(), r.proxySwitches(), r.procs())
	}
	g := r.pick(func(x round) float64 { return x.gibps })
	s += fmt.Sprintf("median %.2f GiB/s (min/median/max %s)", median(g), minMedMax(g, "%.2f"))
	if direct != nil {
		s += fmt.Sprintf(" = %.2fx direct", r.gibps()/direct.gibps())
	}
	if floor != nil {
		s += fmt.Sprintf(", %.2fx the floor; proxies CPU %.2fx the floor's, switches %.2fx", r.gibps()/floor.gibps(),
			r.proxyCPU()/floor.proxyCPU(), r.proxySwitches()/floor.proxySwitches())
	}
	s += fmt.Sprintf("; whole path CPU %.3f s/GiB, endpoints' context switches %.1f/MiB",
		r.pathCPU(), median(r.pick(func(x round) float64 { return x.endpointSwitches })))
	fmt.Println(s)
}

// loadLine prints the machine's load average (the bench's numbers are only
// comparable within one run; this says how busy the machine was).
func loadLine(when string) {
	l, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	fmt.Printf("bench proxy: %s, load average %s\n", when, strings.Join(strings.Fields(string(l))[:3], " "))
}

func minMedMax(v []float64, f string) string {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return fmt.Sprintf(f+" / "+f+" / "+f, s[0], median(s), s[len(s)-1])
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
