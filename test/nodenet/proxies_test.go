package nodenet_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/sim"
)

// TestStreamThroughPatchedProxies runs the virt-handler stand-in's stream through the lab's patched
// migration proxy pair (vendor-patches' labproxy, built by run.sh lab-proxy) between two
// virt-handler sandboxes the real bridge plugin attached, with virt-handler's mTLS:
//   - the target proxy binds its sandbox's migration0 address; a 64 MiB stream crosses whole and
//     checked, and both proxies' byte metrics count it: to_target of the memory stream at least
//     what the stand-in sent, the same on both sides; the proxy serves the series on :8443 while
//     the migration lives and drops them when it stops;
//   - the target's proxy killed mid-stream fails the migration at once, as libvirt's MigrateToURI3
//     reports a broken connection, not by the progress timeout; a new proxy then starts.
//
// Catches: a stream that bypasses the proxies (no metric series, or counts below what was sent),
// a proxy bound elsewhere than migration0, metrics never served or never dropped, a broken pair
// that leaves the stream waiting for the progress timeout.
func TestStreamThroughPatchedProxies(t *testing.T) {
	nodes := []string{"node-a", "node-b"}
	l := startLab(t, nodes...)
	ctx := context.Background()
	bin, err := sim.BuildLabProxy(ctx, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cluster.NewCA("kubevirt.io")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certs, err := sim.WriteHandlerCerts(ca, filepath.Join(dir, "certs"))
	if err != nil {
		t.Fatal(err)
	}
	proxies := &sim.MigrationProxies{Binary: bin, Certs: certs, Dir: dir}
	t.Cleanup(proxies.Close)
	config := mustConfig(t, `{"clusterNetwork":"migration","range":"10.92.0.16/28","mtu":9000}`)
	sb := map[string]nodenet.NS{}
	addrs := map[string]netip.Addr{}
	for _, n := range nodes {
		if err := l.fabric.SetUplink(ctx, n, "migration", 9000); err != nil {
			t.Fatal(err)
		}
		s, addr, err := l.add(t, n, "virt-handler-p"+n, config)
		if err != nil {
			t.Fatal(err)
		}
		sb[n], addrs[n] = s, addr.Addr()
	}
	node := func(n string) *sim.NodeProxy {
		t.Helper()
		p, err := proxies.Node(sb[n], n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	src, dst := node("node-a"), node("node-b")
	if dst.Bind != addrs["node-b"].String() {
		t.Fatalf("the target proxy binds %s, want node-b's migration0 address %s", dst.Bind, addrs["node-b"])
	}
	const mi = 1 << 20
	opts := sim.MigrationOptions{ProgressTimeout: 30, CompletionTimeoutPerGiB: 150}
	stream := func(key string) *sim.Stream {
		t.Helper()
		sockets, err := proxies.SocketDir()
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.ListenStreamVia(dst, key, sockets, false, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	wait := func(s *sim.Stream, within time.Duration, done func(sim.StreamReport) bool) sim.StreamReport {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r := s.Report()
			if done(r) || time.Now().After(deadline) {
				return r
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ended := func(r sim.StreamReport) bool { return r.Done || r.Failure != "" }

	key := "vmi-through-pair"
	s := stream(key)
	s.StartVia(src, addrs["node-b"], sim.StreamPlan{Memory: 64 * mi, Bandwidth: 32 * mi}, opts, 1)
	served := wait(s, 5*time.Second, func(r sim.StreamReport) bool { return r.Delivered > 0 })
	if served.Delivered == 0 {
		t.Fatalf("nothing crossed the pair: %+v", served)
	}
	for _, n := range nodes {
		page, err := sim.ScrapeProxy(ctx, sb[n])
		if err != nil {
			t.Fatalf("%s's proxy metrics: %v", n, err)
		}
		if !strings.Contains(page, fmt.Sprintf(`kubevirt_vmi_migration_proxy_transferred_bytes_total{direction="to_target",port_key="49152",side=%q,uid=%q}`,
			map[string]string{"node-a": "source", "node-b": "target"}[n], key)) {
			t.Errorf("%s's proxy serves no to_target series of %s while it streams:\n%s", n, key, page)
		}
	}
	r := wait(s, 10*time.Second, ended)
	if !r.Done || !r.Via || r.Delivered != 64*mi {
		t.Fatalf("through the pair: %+v; want done, 64 MiB crossed", r)
	}
	s.Close()
	r = s.Report()
	to := r.ProxyBytes["target/to_target/49152"]
	t.Logf("64 MiB through the pair: sent %d, proxies %v", r.Sent, r.ProxyBytes)
	if to < float64(r.Sent) || r.ProxyBytes["source/to_target/49152"] != to {
		t.Errorf("proxy metrics %v; want target/to_target/49152 >= the %d bytes sent, equal on the source side", r.ProxyBytes, r.Sent)
	}
	if page, err := sim.ScrapeProxy(ctx, sb["node-b"]); err != nil || strings.Contains(page, key) {
		t.Errorf("after stop the target proxy still serves %s's series (or none answered: %v)", key, err)
	}

	key = "vmi-target-gone"
	s = stream(key)
	s.StartVia(src, addrs["node-b"], sim.StreamPlan{Memory: 1024 * mi, Bandwidth: 64 * mi}, opts, 2)
	if r := wait(s, 5*time.Second, func(r sim.StreamReport) bool { return r.Delivered > 4*mi }); r.Delivered <= 4*mi {
		t.Fatalf("the stream never got going: %+v", r)
	}
	killed := time.Now()
	dst.Kill()
	r = wait(s, 10*time.Second, ended)
	took := time.Since(killed)
	t.Logf("target proxy killed mid-stream: %+v after %s", r, took)
	if r.Done || !strings.HasPrefix(r.Failure, "Live migration failed error encountered during MigrateToURI3 libvirt api call: ") || took > 5*time.Second {
		t.Errorf("target proxy killed: %+v after %s; want failed by the broken connection within 5 s", r, took)
	}
	if again := node("node-b"); again.PID == dst.PID {
		t.Errorf("no new proxy after the kill")
	}
}

// testWriter sends a command's progress to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
