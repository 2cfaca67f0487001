package nodenet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/test/nodenet"
)

// macOf is the MAC address of link in namespace n.
func macOf(ctx context.Context, t *testing.T, n nodenet.NS, link string) string {
	t.Helper()
	out, err := nodenet.Exec(ctx, n, "ip", "-j", "link", "show", link)
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j link show %s in %s: %v: %s", link, n, err, out)
	}
	return links[0].Address
}

// TestProbesThroughAStuckQueue: the send queue of a node's migration0 stops draining (here a
// token bucket of 1 byte a second holding every frame), so the probe socket's send buffer fills
// and a send can never complete. The agent's probes and its answers to the peers' probes are sent
// with a deadline: its check of a peer still ends (Unreachable) and it still reads its socket
// (a stray datagram sent after the peers' probes is seen). The near miss: the same exchange over
// a queue that drains.
// Catches: a send without a deadline — the check blocks in its send for ever, and so does the
// loop answering the peers, which then reads nothing more (the round that hangs, the agent that
// answers nobody).
func TestProbesThroughAStuckQueue(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		t.Run(fmt.Sprintf("stuck=%t", stuck), func(t *testing.T) { testProbesThroughQueue(t, stuck) })
	}
}

func testProbesThroughQueue(t *testing.T, stuck bool) {
	ctx := context.Background()
	m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mnq%d", os.Getpid()), 2, 1500, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	const port = 4797
	a, b := m.NS(0), m.NS(1)
	// Neighbour entries made by hand: an address resolution would wait in the stuck queue too.
	macA, macB := macOf(ctx, t, a, "migration0"), macOf(ctx, t, b, "migration0")
	for _, c := range []struct {
		ns       nodenet.NS
		peer     netip.Addr
		peerMAC  string
		reversed bool
	}{{a, m.Addr(1), macB, false}, {b, m.Addr(0), macA, true}} {
		if _, err := nodenet.Exec(ctx, c.ns, "ip", "neigh", "replace", c.peer.String(), "lladdr", c.peerMAC, "dev", "migration0", "nud", "permanent"); err != nil {
			t.Fatal(err)
		}
	}
	if stuck {
		if _, err := nodenet.Exec(ctx, a, "tc", "qdisc", "add", "dev", "migration0", "root", "tbf", "rate", "8bit", "burst", "2kb", "limit", "10mb"); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = 100 * time.Millisecond
	open := func(i int) *nodeagent.Prober {
		opened, err := nodeagent.OpenIn(m.NS(i).Path(), "migration0", m.Addr(i), port)
		if err != nil {
			t.Fatal(err)
		}
		// The smallest send buffer the kernel grants: a handful of frames fill it.
		if err := opened.Conn.SetWriteBuffer(1); err != nil {
			t.Fatal(err)
		}
		p := nodeagent.NewProber(opened.Conn, meshNetwork, 1500, timeout, 1)
		go p.Serve()
		t.Cleanup(func() { p.Close() })
		return p
	}
	pa, pb := open(0), open(1)

	// The peer's probes (and the volleys of sizes its checks send once an answer is lost): each
	// answer of a's waits in a's queue.
	var many []nodeagent.Peer
	for i := range 10 {
		many = append(many, nodeagent.Peer{Node: fmt.Sprint("p", i), Addr: netip.AddrPortFrom(m.Addr(0), port)})
	}
	pb.Round(ctx, many, 0)
	// a's own check of b: its probes wait in the same queue.
	done := make(chan []nodeagent.Result, 1)
	go func() {
		done <- pa.Round(ctx, []nodeagent.Peer{{Node: "b", Addr: netip.AddrPortFrom(m.Addr(1), port)}}, 0)
	}()
	select {
	case res := <-done:
		if failed := res[0].Reason != ""; failed != stuck {
			t.Errorf("a's check of b: %q (failed %t), want failed %t", res[0].Reason, failed, stuck)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's check of b has not ended in 10 s: a send waits for ever")
	}

	// A stray datagram to a's port: a's loop reads it once it is not stuck in a send.
	before := pa.Foreign.Load()
	if err := nodenet.InNS(b, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(m.Addr(0), port)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("not a probe"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for pa.Foreign.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("a no longer reads its socket 20 s after the stray datagram: an answer's send waits for ever")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if stuck {
		out, err := nodenet.Exec(ctx, a, "tc", "-s", "qdisc", "show", "dev", "migration0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "backlog") || strings.Contains(string(out), "backlog 0b 0p") {
			t.Errorf("the queue held nothing, so nothing was stuck: %s", out)
		}
	}
}
