package nodenet_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/sim"
)

// TestStreamOverRealPaths runs the virt-handler stand-in's migration stream (sim.Stream) between
// two virt-handler sandboxes the real bridge plugin attached (jumbo network, MTU 9000): the
// target listens on its migration0 address, the source dials from its own. It checks, on the
// kernel's own packets:
//   - a 64 MiB stream at a 64 MiB/s cap crosses whole, in no less than the second its bytes need;
//   - with the target's uplink narrowed to 1500 the connection opens but the memory does not
//     cross, and the monitor (progress timeout 1 s) aborts it with KubeVirt's text;
//   - an abort closes a running stream at once.
//
// Catches: a stream that is not paced (done in less than its bytes need at the cap), completion
// reported before the bytes crossed, a stall that is not detected (the narrowed uplink's stream
// counted as sent rather than delivered), an abort that leaves the stream running.
func TestStreamOverRealPaths(t *testing.T) {
	nodes := []string{"node-a", "node-b"}
	l := startLab(t, nodes...)
	ctx := context.Background()
	config := mustConfig(t, `{"clusterNetwork":"migration","range":"10.92.0.0/28","mtu":9000}`)
	sb := map[string]nodenet.NS{}
	addrs := map[string]netip.Addr{}
	for _, n := range nodes {
		if err := l.fabric.SetUplink(ctx, n, "migration", 9000); err != nil {
			t.Fatal(err)
		}
		s, addr, err := l.add(t, n, "virt-handler-"+n, config)
		if err != nil {
			t.Fatal(err)
		}
		sb[n] = s
		addrs[n] = addr.Addr()
	}
	const mi = 1 << 20
	opts := sim.MigrationOptions{ProgressTimeout: 1, CompletionTimeoutPerGiB: 150}
	stream := func() *sim.Stream {
		t.Helper()
		s, err := sim.ListenStream(sb["node-b"], addrs["node-b"], false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	wait := func(s *sim.Stream, within time.Duration) sim.StreamReport {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r := s.Report()
			if r.Done || r.Failure != "" || time.Now().After(deadline) {
				return r
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	s := stream()
	began := time.Now()
	s.Start(sb["node-a"], addrs["node-a"], addrs["node-b"], sim.StreamPlan{Memory: 64 * mi, Bandwidth: 64 * mi}, opts, 1)
	r := wait(s, 10*time.Second)
	took := time.Since(began)
	t.Logf("64 MiB at 64 MiB/s: %s, %d bytes crossed", took, r.Delivered)
	if !r.Done || !r.Connected || r.Delivered != 64*mi || took < time.Second {
		t.Errorf("healthy path: %+v after %s; want done, 64 MiB crossed, in no less than 1 s", r, took)
	}

	if err := l.fabric.SetUplink(ctx, "node-b", "migration", 1500); err != nil {
		t.Fatal(err)
	}
	s = stream()
	s.Start(sb["node-a"], addrs["node-a"], addrs["node-b"], sim.StreamPlan{Memory: 64 * mi}, opts, 1)
	r = wait(s, 10*time.Second)
	t.Logf("narrowed uplink: %+v", r)
	if r.Done || !r.Connected || r.Failure != "Live migration stuck for 2 seconds and has been aborted" || r.Delivered > 1*mi {
		t.Errorf("narrowed uplink: %+v; want connected, at most 1 MiB crossed, aborted by the progress timeout", r)
	}
	if err := l.fabric.SetUplink(ctx, "node-b", "migration", 9000); err != nil {
		t.Fatal(err)
	}

	s = stream()
	s.Start(sb["node-a"], addrs["node-a"], addrs["node-b"], sim.StreamPlan{Memory: 1024 * mi, Bandwidth: 64 * mi}, opts, 2)
	// Abort a stream that is moving bytes: wait until some crossed.
	for deadline := time.Now().Add(10 * time.Second); s.Report().Delivered == 0 && time.Now().Before(deadline); {
		<-time.After(10 * time.Millisecond) // poll the condition
	}
	if s.Report().Delivered == 0 {
		t.Fatal("the stream never delivered a byte")
	}
	if !s.Abort() {
		t.Fatal("a running stream refused the abort")
	}
	before := s.Report().Delivered
	if r := wait(s, 10*time.Second); r.Delivered != before || r.Failure != "Live migration aborted " || r.Mode != "" && r.Mode != kubevirtv1.MigrationPreCopy {
		t.Errorf("aborted: %+v (had %d bytes at the abort); want nothing more to cross", r, before)
	}
}
