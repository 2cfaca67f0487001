package nodenet_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/sim"
)

// The lab's rates: the target's uplink (a NIC of this speed, both ways) and the node's budget.
const (
	mib        = int64(1) << 20
	uplinkRate = 32 * mib
	budgetRate = 8 * mib
	// streamCap is each migration's own cap (its bandwidthPerMigration), far above its share.
	streamCap = 64 * mib
)

// TestBudgetBoundsMigrationsOnTheWire is issue 54's proof in the kernel: three migrations stream
// into one node (the virt-handler stand-in's streams, between sandboxes the real bridge plugin
// attached), beside a bulk TCP flow (storage replication) into a sandbox on the same node over the
// same uplink, a TBF of uplinkRate. The target's migration0 is shaped with the probe agent's own
// Shaper (HTB on an IFB for what arrives). Measured from what crossed (the bytes the receivers
// counted), in one lab:
//   - the bulk flow alone: the uplink's rate U as it carries TCP;
//   - budget B: the three migrations' sum over their whole run stays within B + 10 %, the bulk
//     flow keeps at least U - B (less 5 % for the machine's noise), a probe (the agent's port) and
//     a UDP echo on another port show the probes keep their own class;
//   - the budget raised to 2B while they stream: applied at once (within 2B + 10 %, above B),
//     no stream failed;
//   - the budget off (Remove): the sum exceeds B.
//
// Catches: a budget not installed on the ingress path (the sum follows the uplink's fair share,
// about 3U/4, far above B), policing instead of shaping (the streams saw-tooth and the sum falls
// far below B, failing the 2B window), a live change that re-creates the tree (a stream fails or
// stalls), probes queued behind the migrations (their round trip grows by the queue).
func TestBudgetBoundsMigrationsOnTheWire(t *testing.T) {
	nodes := []string{"node-t", "node-s1", "node-s2", "node-s3", "node-b"}
	l := startLab(t, nodes...)
	ctx := context.Background()
	config := mustConfig(t, `{"clusterNetwork":"migration","range":"10.93.0.0/27","mtu":9000}`)
	sb, addrs := map[string]nodenet.NS{}, map[string]netip.Addr{}
	attach := func(node, pod string) {
		t.Helper()
		s, addr, err := l.add(t, node, pod, config)
		if err != nil {
			t.Fatal(err)
		}
		sb[pod], addrs[pod] = s, addr.Addr()
	}
	for _, n := range nodes {
		if err := l.fabric.SetUplink(ctx, n, "migration", 9000); err != nil {
			t.Fatal(err)
		}
		attach(n, "virt-handler-"+n)
	}
	attach("node-t", "storage-t")
	attach("node-b", "storage-b")
	if err := l.fabric.ShapeUplink(ctx, "node-t", "migration", uplinkRate); err != nil {
		t.Fatal(err)
	}

	bulk := startBulk(t, sb["storage-b"], addrs["storage-b"], sb["storage-t"], addrs["storage-t"])
	time.Sleep(time.Second) // not a wait for a condition: the bulk flow's warm-up before its rate is sampled
	u := bulk.rate(3 * time.Second)
	t.Logf("the uplink carries the bulk flow alone at %s (its TBF: %s)", mibs(u), mibs(float64(uplinkRate)))
	if u < 0.8*float64(uplinkRate) {
		t.Fatalf("the bulk flow alone reached %s, below 80 %% of the uplink's %s: the machine cannot drive the lab", mibs(u), mibs(float64(uplinkRate)))
	}

	shaper, err := nodeagent.OpenShaper(sb["virt-handler-node-t"].Path(), "migration0", 4797)
	if err != nil {
		t.Fatal(err)
	}
	defer shaper.Close()
	if _, err := shaper.Apply(budgetRate); err != nil {
		t.Fatal(err)
	}
	var streams []*sim.Stream
	start := time.Now()
	for _, src := range []string{"node-s1", "node-s2", "node-s3"} {
		s, err := sim.ListenStream(sb["virt-handler-node-t"], addrs["virt-handler-node-t"], false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		s.Start(sb["virt-handler-"+src], addrs["virt-handler-"+src], addrs["virt-handler-node-t"],
			sim.StreamPlan{Memory: 4 << 30, Bandwidth: streamCap}, sim.MigrationOptions{ProgressTimeout: 150, CompletionTimeoutPerGiB: 150}, 4)
		streams = append(streams, s)
	}
	delivered := func() int64 {
		var sum int64
		for _, s := range streams {
			r := s.Report()
			if r.Failure != "" {
				t.Fatalf("a stream failed: %s", r.Failure)
			}
			sum += r.Delivered
		}
		return sum
	}
	time.Sleep(2 * time.Second) // the sampling window of the shaped rate, not a wait for a condition
	bulkShared := bulk.rate(6 * time.Second)
	whole := float64(delivered()) / time.Since(start).Seconds()
	t.Logf("budget %s: the three migrations %s over their whole run (%s), the bulk flow %s", mibs(float64(budgetRate)), mibs(whole),
		time.Since(start).Round(100*time.Millisecond), mibs(bulkShared))
	if whole > 1.1*float64(budgetRate) {
		t.Errorf("the migrations' sum %s exceeds the budget %s + 10 %%", mibs(whole), mibs(float64(budgetRate)))
	}
	if whole < 0.7*float64(budgetRate) {
		t.Errorf("the migrations' sum %s is far below the budget %s: the shaping starves them", mibs(whole), mibs(float64(budgetRate)))
	}
	if floor := 0.95 * (u - float64(budgetRate)); bulkShared < floor {
		t.Errorf("the bulk flow kept %s, below the uplink's %s minus the budget (less 5 %%): %s", mibs(bulkShared), mibs(u), mibs(floor))
	}
	probe, other := udpRTT(t, sb["virt-handler-node-s1"], addrs["virt-handler-node-s1"], sb["virt-handler-node-t"], addrs["virt-handler-node-t"], 4797),
		udpRTT(t, sb["virt-handler-node-s1"], addrs["virt-handler-node-s1"], sb["virt-handler-node-t"], addrs["virt-handler-node-t"], 4798)
	t.Logf("round trips while the budget binds: the agent's port %s, another port %s (median)", probe, other)
	if probe > 30*time.Millisecond || probe*3 > other {
		t.Errorf("a probe's round trip %s is not far below that of a packet queued with the migrations (%s): the probes do not keep their class", probe, other)
	}

	if _, err := shaper.Apply(2 * budgetRate); err != nil {
		t.Fatal(err)
	}
	before, at := delivered(), time.Now()
	time.Sleep(4 * time.Second) // the sampling window of the rate, not a wait for a condition
	raised := float64(delivered()-before) / time.Since(at).Seconds()
	t.Logf("budget raised to %s while streaming: %s", mibs(float64(2*budgetRate)), mibs(raised))
	if raised > 2.2*float64(budgetRate) || raised < 1.5*float64(budgetRate) {
		t.Errorf("after the budget was raised to %s the migrations moved %s", mibs(float64(2*budgetRate)), mibs(raised))
	}

	if err := shaper.Remove(); err != nil {
		t.Fatal(err)
	}
	before, at = delivered(), time.Now()
	time.Sleep(4 * time.Second) // the sampling window of the rate, not a wait for a condition
	off := float64(delivered()-before) / time.Since(at).Seconds()
	t.Logf("budget off: the migrations %s", mibs(off))
	if off <= 1.1*float64(2*budgetRate) {
		t.Errorf("with the budget off the migrations moved %s, not above %s: something else bounds them", mibs(off), mibs(float64(2*budgetRate)))
	}
	if c, err := shaper.Counters(); err != nil || c.In == 0 {
		t.Errorf("migration0's counters: %+v, %v", c, err)
	}
}

func mibs(bytesPerSecond float64) string {
	return fmt.Sprintf("%.1f MiB/s", bytesPerSecond/float64(mib))
}

// bulk is a TCP flow sending as fast as it can, and the bytes its receiver counted.
type bulk struct{ received atomic.Int64 }

func startBulk(t *testing.T, src nodenet.NS, srcAddr netip.Addr, dst nodenet.NS, dstAddr netip.Addr) *bulk {
	t.Helper()
	b := &bulk{}
	ln, err := nodenet.ListenIn(dst, net.JoinHostPort(dstAddr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			b.received.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	c, err := nodenet.DialIn(context.Background(), src, srcAddr, ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 256<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	return b
}

// rate is what the receiver counted over d.
func (b *bulk) rate(d time.Duration) float64 {
	before, at := b.received.Load(), time.Now()
	time.Sleep(d)
	return float64(b.received.Load()-before) / time.Since(at).Seconds()
}

// udpRTT is the median round trip of 20 small UDP datagrams from src to an echo on dst, both on
// port (the probe agent's sockets bind the same port at both ends).
func udpRTT(t *testing.T, src nodenet.NS, srcAddr netip.Addr, dst nodenet.NS, dstAddr netip.Addr, port int) time.Duration {
	t.Helper()
	var echo, out net.PacketConn
	if err := nodenet.InNS(dst, func() (err error) {
		echo, err = net.ListenPacket("udp", net.JoinHostPort(dstAddr.String(), fmt.Sprint(port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(buf[:n], from)
		}
	}()
	if err := nodenet.InNS(src, func() (err error) {
		out, err = net.ListenPacket("udp", net.JoinHostPort(srcAddr.String(), fmt.Sprint(port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	to := &net.UDPAddr{IP: dstAddr.AsSlice(), Port: port}
	var rtts []time.Duration
	buf := make([]byte, 2048)
	for i := range 20 {
		sent := time.Now()
		if _, err := out.WriteTo([]byte(fmt.Sprintf("probe %d", i)), to); err != nil {
			t.Fatal(err)
		}
		_ = out.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, _, err := out.ReadFrom(buf); err != nil {
			rtts = append(rtts, 2*time.Second)
			continue
		}
		rtts = append(rtts, time.Since(sent))
		time.Sleep(20 * time.Millisecond)
	}
	return median(rtts)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
