package migration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
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
	qemuRuns    = 5       // QEMU migrations per path; the median is reported
)

// BenchmarkProxyThroughput moves 2 GiB over the lab's migration link: one direct
// TCP connection, the patched proxy pair, and upstream's unpatched proxy pair
// (the upstreampeer binary), plain and mTLS, rounds interleaved.
func BenchmarkProxyThroughput(b *testing.B) {
	peer := os.Getenv(EnvUpstreamPeer)
	if peer == "" {
		b.Fatalf("%s is not set: run this through vendor-patches/run.sh bench", EnvUpstreamPeer)
	}
	for i := 0; i < b.N; i++ {
		plain := benchPaths(b, false, peer)
		mtls := benchPaths(b, true, peer)
		direct := median(plain["direct"])
		line(b, "plain direct TCP", plain["direct"], "")
		line(b, "plain upstream pair", plain["upstream"], ratio(median(plain["upstream"]), direct, "direct", 0, false))
		line(b, "plain patched pair", plain["patched"],
			ratio(median(plain["patched"]), direct, "direct", 0.8, true)+", "+
				ratio(median(plain["patched"]), median(plain["upstream"]), "upstream", 1.3, true))
		line(b, "mTLS upstream pair", mtls["upstream"], ratio(median(mtls["upstream"]), direct, "direct TCP", 0, false))
		line(b, "mTLS patched pair", mtls["patched"],
			ratio(median(mtls["patched"]), direct, "direct TCP", 0, false)+", "+
				ratio(median(mtls["patched"]), median(mtls["upstream"]), "upstream", 1.2, true))
		b.ReportMetric(median(plain["patched"])/direct, "plain-patched/direct")
		b.ReportMetric(median(plain["patched"])/median(plain["upstream"]), "plain-patched/upstream")
		b.ReportMetric(median(mtls["patched"])/median(mtls["upstream"]), "mtls-patched/upstream")
	}
}

// benchPaths measures every path of one lab benchRounds times, in GiB/s.
func benchPaths(b *testing.B, withTLS bool, peer string) map[string][]float64 {
	e := newEnv(b, withTLS)
	up := e.spawnUpstream(b, peer)
	out := map[string][]float64{}
	for r := 0; r < benchRounds; r++ {
		if !withTLS {
			out["direct"] = append(out["direct"], e.direct(b, fmt.Sprintf("direct-%d", r)))
		}
		out["patched"] = append(out["patched"], e.proxied(b, e.source, e.target, fmt.Sprintf("patched-%v-%d", withTLS, r)))
		out["upstream"] = append(out["upstream"], e.proxied(b, up[0], up[1], fmt.Sprintf("upstream-%v-%d", withTLS, r)))
	}
	return out
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
func (e *env) direct(b *testing.B, key string) float64 {
	r, err := e.target.Do(node.Request{Op: "sink", Key: key, Network: "tcp", Addr: net.JoinHostPort(e.lab.TargetMig, "0"), Size: benchSize})
	if err != nil {
		b.Fatal(err)
	}
	s, err := e.source.Do(node.Request{Op: "send", Network: "tcp", Addr: net.JoinHostPort(e.lab.TargetMig, strconv.Itoa(r.Ports["sink"])), Size: benchSize})
	if err != nil {
		b.Fatal(err)
	}
	return finish(b, e.target, key, s.Start)
}

// proxied streams through a source proxy on src and a target proxy on dst,
// unix socket -> TCP over the migration link -> unix socket.
func (e *env) proxied(b *testing.B, src, dst *node.Client, key string) float64 {
	dir, err := os.MkdirTemp("", "vpb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sinkPath := filepath.Join(dir, key+"-49152")
	if _, err := dst.Do(node.Request{Op: "sink", Key: key, Network: "unix", Addr: sinkPath, Size: benchSize}); err != nil {
		b.Fatal(err)
	}
	r, err := dst.Do(node.Request{Op: "start-target", Key: key, Sockets: []string{sinkPath}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = dst.Do(node.Request{Op: "stop", Key: key}) }()
	sr, err := src.Do(node.Request{Op: "start-source", Key: key, Addr: e.lab.TargetMig, Ports: r.Ports, Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = src.Do(node.Request{Op: "stop", Key: key}) }()
	if len(sr.Files) != 1 {
		b.Fatalf("source proxy files %v", sr.Files)
	}
	s, err := src.Do(node.Request{Op: "send", Network: "unix", Addr: sr.Files[0], Size: benchSize})
	if err != nil {
		b.Fatal(err)
	}
	return finish(b, dst, key, s.Start)
}

// finish waits (at most 3 minutes) for the sink and returns GiB/s.
func finish(b *testing.B, sinkNode *node.Client, key string, start int64) float64 {
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

// BenchmarkQEMUMigration times real migrations through the patched proxy pair
// and directly over the migration link (plain TCP), runs interleaved.
func BenchmarkQEMUMigration(b *testing.B) {
	for i := 0; i < b.N; i++ {
		e := newEnv(b, false)
		o := qemu.Options{MaxBytes: fast, Timeout: 30 * time.Second}
		var proxied, direct []float64
		for r := 0; r < qemuRuns; r++ {
			f := e.prepare(b, fmt.Sprintf("vmi-bench-%d", r), o)
			f.listen(b)
			_, took, err := f.migrate(o)
			if err != nil {
				b.Fatalf("migration through the proxies, run %d: %v", r, err)
			}
			proxied = append(proxied, took.Seconds())
			f.src.Kill()
			f.dst.Kill()

			dir, err := os.MkdirTemp("", "vpq")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			src, dst := e.startVMs(b, dir, o)
			uri := "tcp:" + net.JoinHostPort(e.lab.TargetMig, strconv.Itoa(49300+r))
			if err := qemu.Incoming(dst.QMP, uri); err != nil {
				b.Fatal(err)
			}
			_, took, err = qemu.Migrate(src.QMP, dst.QMP, uri, o)
			if err != nil {
				b.Fatalf("direct migration, run %d: %v", r, err)
			}
			direct = append(direct, took.Seconds())
			src.Kill()
			dst.Kill()
		}
		mp, md := median(proxied), median(direct)
		fmt.Printf("bench proxy: qemu migration 256 MiB plain, through the patched proxies: median %.2fs (%s)\n", mp, list(proxied, "%.2f"))
		fmt.Printf("bench proxy: qemu migration 256 MiB plain, direct TCP: median %.2fs (%s)\n", md, list(direct, "%.2f"))
		fmt.Printf("bench proxy: qemu migration proxies/direct = %.2fx (goal <= 1.10x: %s)\n", mp/md, verdict(mp/md <= 1.1))
		b.ReportMetric(mp/md, "qemu-proxied/direct")
	}
}

func line(b *testing.B, what string, runs []float64, ratios string) {
	b.Helper()
	s := fmt.Sprintf("bench proxy: %s, 2 GiB: median %.2f GiB/s (%s)", what, median(runs), list(runs, "%.2f"))
	if ratios != "" {
		s += "; " + ratios
	}
	fmt.Println(s)
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
