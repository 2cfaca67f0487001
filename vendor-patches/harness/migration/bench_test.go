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

// BenchmarkProxyThroughput moves 2 GiB over the lab's migration link: one direct
// TCP connection, the patched proxy pair, and upstream's unpatched proxy pair
// (the upstreampeer binary), plain and mTLS, rounds interleaved. The sender and
// the sink run in node processes of their own, so each path's CPU time is known
// per process: the endpoints' and the proxies'.
func BenchmarkProxyThroughput(b *testing.B) {
	peer := os.Getenv(EnvUpstreamPeer)
	if peer == "" {
		b.Fatalf("%s is not set: run this through vendor-patches/run.sh bench", EnvUpstreamPeer)
	}
	for i := 0; i < b.N; i++ {
		loadLine("throughput bench start")
		plain := benchPaths(b, false, peer)
		mtls := benchPaths(b, true, peer)
		loadLine("throughput bench end")
		direct, floor := plain["direct"], plain["floor"]
		d, fl := direct.gibps(), floor.gibps()
		line(b, "plain direct TCP", direct, direct, "")
		line(b, "plain floor pair (splicefloor: the cheapest relay pair, not the product)", floor, direct, ratio(fl, d, "direct", 0, false))
		line(b, "plain upstream pair", plain["upstream"], direct, ratio(plain["upstream"].gibps(), d, "direct", 0, false)+", "+
			ratio(plain["upstream"].gibps(), fl, "floor", 0, false))
		line(b, "plain patched pair", plain["patched"], direct,
			ratio(plain["patched"].gibps(), d, "direct", 0.8, true)+", "+
				ratio(plain["patched"].gibps(), plain["upstream"].gibps(), "upstream", 1.3, true)+", "+
				ratio(plain["patched"].gibps(), fl, "floor", 0, false))
		floorLine(direct, floor, plain["patched"], plain["upstream"])
		line(b, "mTLS upstream pair", mtls["upstream"], direct, ratio(mtls["upstream"].gibps(), d, "direct TCP", 0, false))
		line(b, "mTLS patched pair", mtls["patched"], direct,
			ratio(mtls["patched"].gibps(), d, "direct TCP", 0, false)+", "+
				ratio(mtls["patched"].gibps(), mtls["upstream"].gibps(), "upstream", 1.5, true))
		b.ReportMetric(plain["patched"].gibps()/d, "plain-patched/direct")
		b.ReportMetric(fl/d, "plain-floor/direct")
		b.ReportMetric(plain["patched"].gibps()/fl, "plain-patched/floor")
		b.ReportMetric(plain["patched"].gibps()/plain["upstream"].gibps(), "plain-patched/upstream")
		b.ReportMetric(mtls["patched"].gibps()/mtls["upstream"].gibps(), "mtls-patched/upstream")
	}
}

// rounds are one path's measures.
type rounds []round

// round is one 2 GiB stream: GiB/s, and the CPU seconds per GiB of its
// endpoints (sender + sink processes) and of its proxies (both proxy processes),
// and the context switches per MiB of each.
type round struct {
	gibps, endpoints, proxies       float64
	endpointSwitches, proxySwitches float64
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

// lab is one throughput lab: the patched proxies (e.source, e.target), upstream's
// (up), and the endpoint nodes that send and sink the streams.
type lab struct {
	*env
	up             [2]*node.Client
	sender, sinker *node.Client
}

// benchPaths measures every path of one lab benchRounds times.
func benchPaths(b *testing.B, withTLS bool, peer string) map[string]rounds {
	e := newEnv(b, withTLS)
	l := &lab{env: e, up: e.spawnUpstream(b, peer)}
	l.sender, l.sinker = e.spawnPlain(b, e.lab.Source), e.spawnPlain(b, e.lab.Target)
	paths := []string{"patched", "upstream"}
	if !withTLS {
		// The floor relay splices plain streams only.
		paths = append([]string{"direct", "floor"}, paths...)
	}
	if dir := os.Getenv(EnvProfile); dir != "" {
		for _, p := range paths {
			if p != "direct" {
				l.profile(b, dir, p, withTLS)
			}
		}
	}
	out := map[string]rounds{}
	for r := 0; r < benchRounds; r++ {
		for _, p := range paths {
			out[p] = append(out[p], l.measure(b, p, fmt.Sprintf("%s-%v-%d", p, withTLS, r), nil))
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
	before, swBefore := cpuOf(b, procs)
	gibps := stream()
	after, swAfter := cpuOf(b, procs)
	perGiB := func(i int) float64 { return (after[i] - before[i]) / (float64(benchSize) / (1 << 30)) }
	swPerMiB := func(i int) float64 { return (swAfter[i] - swBefore[i]) / (float64(benchSize) / (1 << 20)) }
	r := round{gibps: gibps, endpoints: perGiB(0) + perGiB(1), endpointSwitches: swPerMiB(0) + swPerMiB(1)}
	for i := 2; i < len(procs); i++ {
		r.proxies += perGiB(i)
		r.proxySwitches += swPerMiB(i)
	}
	return r
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
	name := path + map[bool]string{false: "-plain", true: "-mtls"}[withTLS]
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
	r, err := l.sinker.Do(node.Request{Op: "sink", Key: key, Network: "tcp", Addr: net.JoinHostPort(l.lab.TargetMig, "0"), Size: benchSize})
	if err != nil {
		b.Fatal(err)
	}
	var end func()
	if during != nil {
		end = during()
	}
	s, err := l.sender.Do(node.Request{Op: "send", Network: "tcp", Addr: net.JoinHostPort(l.lab.TargetMig, strconv.Itoa(r.Ports["sink"])), Size: benchSize})
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
	if _, err := l.sinker.Do(node.Request{Op: "sink", Key: key, Network: "unix", Addr: sinkPath, Size: benchSize}); err != nil {
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
	s, err := l.sender.Do(node.Request{Op: "send", Network: "unix", Addr: sr.Files[0], Size: benchSize})
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
		for _, mfd := range []int{0, 4} {
			runs := map[string]qemuRuns{}
			failed := map[string][]string{}
			for r := 0; r < qemuBenchRuns; r++ {
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
		}
		loadLine("qemu bench end")
	}
}

// qemuBenchRuns is how many migrations of each path and mode the QEMU bench runs.
const qemuBenchRuns = 3

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
	read := func() (q, p float64) {
		for _, vm := range []*qemu.VM{src, dst} {
			c, err := qemu.MigrationCPU(vm.PID())
			if err != nil {
				b.Fatal(err)
			}
			q += c
		}
		cpu, _ := cpuOf(b, proxies)
		for _, c := range cpu {
			p += c
		}
		return q, p
	}
	q0, p0 := read()
	var q1, p1 float64
	o.Landed = func() { q1, p1 = read() }
	info, _, err := qemu.Migrate(src.QMP, dst.QMP, uri, o)
	if err != nil {
		return qemuRun{}, fmt.Errorf("%v (%s, %d bytes)", err, info.Status, info.RAM.Transferred)
	}
	if info.RAM.DirtySyncCount < 2 {
		b.Fatalf("%s: dirty-sync-count %d: pre-copy did not iterate", key, info.RAM.DirtySyncCount)
	}
	return qemuRun{totalMs: float64(info.TotalTime), downtimeMs: float64(info.Downtime), transferred: info.RAM.Transferred,
		qemuCPU: q1 - q0, proxyCPU: p1 - p0}, nil
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
		s += fmt.Sprintf("; CPU per GiB: QEMU %.2f s, proxies %.2f s, whole path %.2f s = %.2fx direct's",
			median(r.pick(perGiB(func(x qemuRun) float64 { return x.qemuCPU }))),
			median(r.pick(perGiB(func(x qemuRun) float64 { return x.proxyCPU }))),
			pathCPU(r), pathCPU(r)/pathCPU(direct))
	}
	if len(failed) > 0 {
		s += fmt.Sprintf("; %d of %d runs FAILED (first: %s)", len(failed), len(failed)+len(r), failed[0])
	}
	fmt.Println(s)
}

// line prints one throughput measure: GiB/s (median, then min/median/max of
// the rounds), its ratios, and its CPU cost per GiB against the direct path's.
func line(b *testing.B, what string, r, direct rounds, ratios string) {
	b.Helper()
	g := r.pick(func(x round) float64 { return x.gibps })
	s := fmt.Sprintf("bench proxy: %s, 2 GiB: median %.2f GiB/s (min/median/max %s)", what, median(g), minMedMax(g, "%.2f"))
	if ratios != "" {
		s += "; " + ratios
	}
	s += fmt.Sprintf("; CPU per GiB: proxies %.2f s, whole path %.2f s = %.2fx direct's %.2f s; context switches per MiB: proxies %.1f, endpoints %.1f",
		r.proxyCPU(), r.pathCPU(), r.pathCPU()/direct.pathCPU(), direct.pathCPU(),
		median(r.pick(func(x round) float64 { return x.proxySwitches })), median(r.pick(func(x round) float64 { return x.endpointSwitches })))
	fmt.Println(s)
}

// floorLine prints the floor's arithmetic: what the cheapest relay pair reaches
// against direct TCP bounds what any proxy pair can reach on this machine, so a
// goal above it is out of reach for every implementation. The CPU bound says the
// same without the runs' noise: on N cores a path costing C CPU seconds per GiB
// moves at most N/C GiB/s.
func floorLine(direct, floor, patched, upstream rounds) {
	d, f, p, u := direct.gibps(), floor.gibps(), patched.gibps(), upstream.gibps()
	reach := func(goal, limit float64) string {
		if goal <= limit {
			return fmt.Sprintf("within the floor's %.2fx", limit)
		}
		return fmt.Sprintf("above the floor's %.2fx: no relay pair reaches it here", limit)
	}
	n := float64(runtime.NumCPU())
	fmt.Printf("bench proxy: plain floor arithmetic: the floor pair moves %.2f GiB/s = %.2fx direct, so goal 0.8x direct is %s; "+
		"the floor pair is %.2fx upstream's, so goal patched >= 1.3x upstream is %s; patched is %.2fx the floor, upstream %.2fx. "+
		"CPU bound on %.0f cores (at most cores / CPU per GiB): direct path %.2f s/GiB <= %.2f GiB/s, floor path %.2f s/GiB <= %.2f GiB/s "+
		"(relays %.2f s), patched path %.2f s/GiB <= %.2f GiB/s (proxies %.2f s); 0.8x direct (%.2f GiB/s) needs a path of at most %.2f s/GiB\n",
		f, f/d, reach(0.8, f/d), f/u, reach(1.3, f/u), p/f, u/f,
		n, direct.pathCPU(), n/direct.pathCPU(), floor.pathCPU(), n/floor.pathCPU(), floor.proxyCPU(),
		patched.pathCPU(), n/patched.pathCPU(), patched.proxyCPU(), 0.8*d, n/(0.8*d))
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

// ratio formats a/base; with a goal it says whether a >= goal × base.
func ratio(a, base float64, baseName string, goal float64, hasGoal bool) string {
	s := fmt.Sprintf("%.2fx %s", a/base, baseName)
	if hasGoal {
		s += fmt.Sprintf(" (goal >= %.1fx: %s)", goal, verdict(a/base >= goal))
	}
	return s
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

func list(v []float64, f string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(f, x)
	}
	return strings.Join(parts, " ")
}
