package nodeagent

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/migranet/migranet/settings/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

const testNet = "kubevirt/vm-migration-network-0123456789"

func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addrOf(c *net.UDPConn) netip.AddrPort { return netip.MustParseAddrPort(c.LocalAddr().String()) }

func newProber(t *testing.T, mtu int) *Prober {
	p := NewProber(listen(t), testNet, mtu, 150*time.Millisecond, 2)
	go p.Serve()
	return p
}

// limited answers this network's probes whose IPv4 frame is at most frame bytes, as a peer behind
// a link of that MTU would: the larger ones are lost on the way.
func limited(t *testing.T, frame int) netip.AddrPort {
	c := listen(t)
	go func() {
		buf := make([]byte, 65536)
		out := make([]byte, headerLen)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			h, err := decode(buf[:n], IDOf(testNet))
			if err != nil || h.kind != kindProbe || n+28 > frame {
				continue
			}
			header{kind: kindReply, net: h.net, seq: h.seq, size: uint32(n)}.encode(out)
			_, _ = c.WriteToUDPAddrPort(out, from)
		}
	}()
	return addrOf(c)
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	a := newProber(t, 9000)
	b := newProber(t, 9000)
	silent := addrOf(listen(t)) // a socket nobody reads: every probe is lost
	tests := []struct {
		name    string
		peer    netip.AddrPort
		reason  string
		largest int
	}{
		{"a healthy peer", addrOf(b.conn), "", 0},
		{"nothing answers", silent, v1beta1.PathUnreachable, 0},
		{"full frames lost, 1500 crosses", limited(t, 1500), v1beta1.PathMTU, 1500},
		{"the largest between two ladder steps", limited(t, 1550), v1beta1.PathMTU, 1548},
		{"below the smallest step, found by the fine volley", limited(t, 1000), v1beta1.PathMTU, 968},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r := a.Check(ctx, Peer{Node: "peer", Addr: tt.peer})
			if r.At.Before(before) || r.At.After(before.Add(100*time.Millisecond)) {
				t.Errorf("At = %v, want when the check began (%v): the abort rule dates a failure by it", r.At, before)
			}
			if r.Reason != tt.reason || r.Largest != tt.largest {
				t.Errorf("Check = reason %q largest %d, want %q %d", r.Reason, r.Largest, tt.reason, tt.largest)
			}
			if tt.reason != v1beta1.PathUnreachable && r.RTT <= 0 {
				t.Errorf("no round-trip time for a peer that answered")
			}
		})
	}
}

// TestOneWay: a peer that answers none of our probes is Unreachable until one of its own probes
// arrives echoing a sequence number below ours sent before it: then it is OneWay. A probe of its
// that shows it received ours proves nothing lost.
func TestOneWay(t *testing.T) {
	ctx := context.Background()
	a := newProber(t, 1500)
	mute := listen(t) // sends probes, answers nothing
	peer := Peer{Node: "mute", Addr: addrOf(mute)}
	if r := a.Check(ctx, peer); r.Reason != v1beta1.PathUnreachable {
		t.Fatalf("nothing heard yet: %q, want Unreachable", r.Reason)
	}
	var seq uint64
	send := func(echo uint64) {
		seq++
		pkt := make([]byte, headerLen)
		header{kind: kindProbe, net: IDOf(testNet), seq: seq, size: headerLen, echo: echo}.encode(pkt)
		if _, err := mute.WriteToUDPAddrPort(pkt, addrOf(a.conn)); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(2 * time.Second); ; { // until Serve has read it
			a.mu.Lock()
			got := a.seenLocked(peer.Addr.Addr()).maxSeq
			a.mu.Unlock()
			if got == seq {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the probe with sequence number %d never reached Serve", seq)
			}
			runtime.Gosched()
		}
	}
	send(a.seq.Load()) // it received everything we sent: no proof
	if r := a.Check(ctx, peer); r.Reason != v1beta1.PathUnreachable {
		t.Errorf("a peer that received our probes: %q, want Unreachable", r.Reason)
	}
	send(0) // it never received any of ours
	if r := a.Check(ctx, peer); r.Reason != v1beta1.PathOneWay {
		t.Errorf("a peer whose probe proves ours lost: %q, want OneWay", r.Reason)
	}
}

// TestForeignPacketsIgnored: another network's probes and stray datagrams get no answer and are
// counted.
func TestForeignPacketsIgnored(t *testing.T) {
	a := newProber(t, 1500)
	c := listen(t)
	other := make([]byte, headerLen)
	header{kind: kindProbe, net: IDOf("kubevirt/another"), seq: 1, size: headerLen}.encode(other)
	for _, pkt := range [][]byte{other, []byte("hello"), make([]byte, 64)} {
		if _, err := c.WriteToUDPAddrPort(pkt, addrOf(a.conn)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := c.ReadFromUDPAddrPort(make([]byte, 100)); err == nil {
		t.Errorf("a foreign packet was answered (%d bytes)", n)
	}
	if got := a.Foreign.Load(); got != 3 {
		t.Errorf("Foreign = %d, want 3", got)
	}
}

func TestRoundSpreadsAndSorts(t *testing.T) {
	a := newProber(t, 1500)
	var peers []Peer
	for _, n := range []string{"n3", "n1", "n2"} {
		peers = append(peers, Peer{Node: n, Addr: addrOf(newProber(t, 1500).conn)})
	}
	start := time.Now()
	res := a.Round(context.Background(), peers, 300*time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("round over 3 peers spread over 300ms took %v: not spread", took)
	}
	for i, want := range []string{"n1", "n2", "n3"} {
		if res[i].Node != want || res[i].Reason != "" {
			t.Errorf("result %d = %+v, want %s passing", i, res[i], want)
		}
	}
}

// TestJudgedThisRound: a failure counts only towards a peer whose agent was the same Ready pod
// from the round's start to its end. Near misses side by side: the same pod (kept), a new pod
// Ready again by the end (dropped: a restart the round straddled), not Ready at the end (dropped),
// and a pass towards a restarted peer (kept: an answer is evidence).
func TestJudgedThisRound(t *testing.T) {
	results := []Result{
		{Peer: Peer{Node: "same"}, Reason: "Unreachable"},
		{Peer: Peer{Node: "replaced"}, Reason: "Unreachable"},
		{Peer: Peer{Node: "gone"}, Reason: "Unreachable"},
		{Peer: Peer{Node: "replaced-pass"}},
	}
	start := map[string]types.UID{"same": "a", "replaced": "b", "gone": "c", "replaced-pass": "d"}
	end := map[string]types.UID{"same": "a", "replaced": "b2", "replaced-pass": "d2"}
	var got []string
	for _, r := range JudgedThisRound(results, start, end) {
		got = append(got, r.Node)
	}
	if want := []string{"same", "replaced-pass"}; !slices.Equal(got, want) {
		t.Errorf("judged %q, want %q", got, want)
	}
}
