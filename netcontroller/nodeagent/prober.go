package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Peer is one node to probe: its migration0 address and the port its agent answers on.
type Peer struct {
	Node string
	Addr netip.AddrPort
}

// Result is one peer's verdict in a round.
type Result struct {
	Peer
	// Reason is "" when the path passed, else v1beta1.PathUnreachable, PathOneWay or PathMTU.
	Reason string
	// Largest is, for PathMTU, the largest frame that crossed (0: none did).
	Largest int
	// RTT is the small probe's round-trip time (0 when it got no reply).
	RTT time.Duration
	// At is when the check sent its first probe: a failure it finds was not seen before then.
	At time.Time
}

// ladder holds the frame sizes a failing full-size probe falls back on: the MTUs links commonly
// have, from IPv6's minimum up to jumbo frames.
var ladder = []int{1280, 1400, 1450, 1480, 1492, 1500, 1600, 2000, 3000, 4000, 4352, 6000, 7000, 8000, 8500, 8900, 9000, 9100, 9216}

// Prober sends and answers probes on one socket of one network.
type Prober struct {
	conn    *net.UDPConn
	id      NetworkID
	mtu     int  // the frame size full-size probes fill
	is4     bool // the socket's family
	timeout time.Duration
	tries   int

	seq     atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan uint32 // seq -> size the peer received
	peers   map[netip.Addr]*seen
	// Foreign counts packets on the port that were not this network's probes.
	Foreign atomic.Uint64
	// Sent counts probes sent (replies not included).
	Sent atomic.Uint64

	// The neighbour entries the probes use (RemoveNeighbours): nil while the prober leaves them.
	nmu     sync.Mutex
	neigh   *Neighbours
	grace   time.Duration
	touched map[netip.Addr]*touch
	cap     int   // the entries left in place (0: none): only those beyond it are removed
	held    int   // the interface's entries at the last sweep
	peak    int   // the most entries seen at a sweep since the last NeighbourUse
	nerr    error // why removing stopped
	stop    chan struct{}
	// sweeping is the sweep goroutine, which Close waits for: it may be inside a request on the
	// neighbour socket, whose descriptor must not be closed (and its number reused) under it.
	sweeping sync.WaitGroup
	// Removed counts the neighbour entries removed.
	Removed atomic.Uint64
	// Swept is when the last sweep of the neighbour entries ended (Unix nanoseconds; 0 before the
	// first, and without RemoveNeighbours): what a caller waits on to read the entries settled.
	Swept atomic.Int64
}

// touch is one peer address whose neighbour entry the prober used: when last, and how many of
// its exchanges are still going on.
type touch struct {
	last time.Time
	busy int
}

// NewProber probes network (namespace/name) over conn with full-size frames of mtu bytes; each
// exchange waits timeout for its reply and is tried tries times.
func NewProber(conn *net.UDPConn, network string, mtu int, timeout time.Duration, tries int) *Prober {
	la, _ := netip.ParseAddrPort(conn.LocalAddr().String())
	return &Prober{conn: conn, id: IDOf(network), mtu: mtu, is4: la.Addr().Unmap().Is4(), timeout: timeout, tries: max(tries, 1),
		pending: map[uint64]chan uint32{}, peers: map[netip.Addr]*seen{}}
}

// seen is what the prober knows of one peer's traffic, to tell a path lost one way from one lost
// both ways: a probe from the peer that arrives echoing a sequence number below one of ours sent
// well before (a timeout earlier) proves ours lost while the peer's arrive.
type seen struct {
	maxSeq  uint64        // the highest sequence number of the peer's probes received
	sends   [8]sendRecord // our latest probes to the peer, a ring
	next    int
	lost    time.Time // when the peer last proved one of our probes lost
	replied time.Time // when the peer last answered one of ours
}

type sendRecord struct {
	seq uint64
	at  time.Time
}

// seenLocked returns addr's record (p.mu held).
func (p *Prober) seenLocked(addr netip.Addr) *seen {
	st := p.peers[addr]
	if st == nil {
		st = &seen{}
		p.peers[addr] = st
	}
	return st
}

// Serve answers the peers' probes and hands replies to the exchanges waiting for them, until the
// socket is closed.
func (p *Prober) Serve() {
	buf := make([]byte, 65536)
	out := make([]byte, headerLen)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		h, err := decode(buf[:n], p.id)
		if err != nil {
			p.Foreign.Add(1)
			continue
		}
		switch h.kind {
		case kindProbe:
			p.mu.Lock()
			p.sawProbe(p.seenLocked(from.Addr().Unmap()), h, time.Now())
			p.mu.Unlock()
			header{kind: kindReply, net: p.id, seq: h.seq, size: uint32(n)}.encode(out)
			_ = p.write(out, from)
			p.touch(from.Addr().Unmap(), 0)
		case kindReply:
			p.mu.Lock()
			ch := p.pending[h.seq]
			p.seenLocked(from.Addr().Unmap()).replied = time.Now()
			p.mu.Unlock()
			if ch != nil {
				select {
				case ch <- h.size:
				default:
				}
			}
		}
	}
}

// sawProbe notes a probe h from the peer st arriving at now (p.mu held): its sequence number, and
// whether its echo proves one of our probes lost — the latest we sent a timeout or more before
// now, with a higher sequence number than the peer ever received from us.
func (p *Prober) sawProbe(st *seen, h header, now time.Time) {
	st.maxSeq = max(st.maxSeq, h.seq)
	var latest sendRecord
	for _, s := range st.sends {
		if s.seq > latest.seq && s.at.Before(now.Add(-p.timeout)) {
			latest = s
		}
	}
	if latest.seq > h.echo {
		st.lost = now
	}
}

// Close closes the socket (Serve returns) and stops removing neighbour entries: it returns once
// the sweep has ended (within one neighbour request's timeout) and closed the neighbour socket.
func (p *Prober) Close() error {
	p.nmu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.nmu.Unlock()
	p.sweeping.Wait()
	p.nmu.Lock()
	n := p.neigh
	p.neigh = nil
	p.nmu.Unlock()
	_ = n.Close()
	return p.conn.Close()
}

// write sends one datagram to addr, waiting at most the probe timeout for room in the socket's
// send buffer: a send the kernel cannot take (a queue that does not drain) fails instead of
// holding the check, or the answers to the peers, for ever.
func (p *Prober) write(b []byte, addr netip.AddrPort) error {
	if err := p.conn.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil {
		return err
	}
	_, err := p.conn.WriteToUDPAddrPort(b, addr)
	return err
}

// UseNeighbours gives the prober n, a neighbour socket in the probe socket's namespace on its
// interface (Opened.Neighbours): Neighbours lists through it, RemoveNeighbours removes through it.
// The prober owns n from then on (Close closes it). Call it before Serve.
func (p *Prober) UseNeighbours(n *Neighbours) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	p.neigh = n
}

// RemoveNeighbours makes the prober remove the neighbour entry of every peer it probed or
// answered once grace has passed without an exchange with that peer, beyond the cap
// (SetNeighbourCap; without one, every such entry): the entries the probes make then stay about
// the cap (or, without one, the peers touched per grace plus the checks going on) instead of one
// per peer, refreshed every round. A removed entry costs one address resolution (a broadcast) at
// the next exchange. Removing needs CAP_NET_ADMIN; refused, the prober stops trying and NeighbourUse
// says why. Call it after UseNeighbours and before Serve; without a socket it does nothing.
func (p *Prober) RemoveNeighbours(grace time.Duration) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	if p.neigh == nil || p.stop != nil {
		return
	}
	p.grace, p.touched, p.stop = grace, map[netip.Addr]*touch{}, make(chan struct{})
	p.sweeping.Add(1)
	go func(stop chan struct{}) {
		defer p.sweeping.Done()
		p.sweep(stop, max(grace/4, 10*time.Millisecond))
	}(p.stop)
}

// SetNeighbourCap makes the removal (RemoveNeighbours) leave up to n entries in place, removing
// only those beyond, least recently used first; 0 removes every idle one. Below the cap the
// probes cost no address resolution (each removed entry costs one, a broadcast, at the next
// exchange with its peer).
func (p *Prober) SetNeighbourCap(n int) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	p.cap = max(n, 0)
}

// touch notes an exchange with addr: busy +1 when one begins, -1 when it ends, 0 for a single
// packet.
func (p *Prober) touch(addr netip.Addr, busy int) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	if p.touched == nil {
		return
	}
	t := p.touched[addr]
	if t == nil {
		t = &touch{}
		p.touched[addr] = t
	}
	t.last, t.busy = time.Now(), t.busy+busy
}

// sweep, every tick until stop, removes the interface's entries of the peers the prober
// exchanged with once grace has passed since the last exchange — also an entry made anew
// without one (the peer's kernel confirms its own entry of this node with a unicast probe
// delay_first_probe_time, 5 s, after its last packet, and that makes this node's entry again) —
// except an entry confirmed since the prober's last exchange with its peer: something else uses
// it (a migration's TCP stream confirms its entry as its data is acknowledged), and removing it
// would make that stream wait for an address resolution, so it is left alone.
func (p *Prober) sweep(stop chan struct{}, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		// A tick and a stop both ready (a request that timed out lets the ticker fire): select
		// picks one at random, so a stopped sweep could start request after request and hold Close
		// for several timeouts. Stop wins.
		select {
		case <-stop:
			return
		default:
		}
		p.nmu.Lock()
		n := p.neigh
		p.nmu.Unlock()
		if n == nil {
			return
		}
		entries, err := n.Entries()
		if err != nil {
			continue
		}
		now := time.Now()
		type cand struct {
			addr netip.Addr
			last time.Time
		}
		var remove []cand
		p.nmu.Lock()
		for _, e := range entries {
			t := p.touched[e.Addr]
			if t == nil || t.busy > 0 {
				continue // not a peer of the probes, or an exchange going on
			}
			idle := now.Sub(t.last)
			// Confirmed more than half a grace after the last exchange (an address resolution the
			// exchange started answers within it): something else confirms the entry.
			if idle < p.grace || e.Confirmed < idle-p.grace/2 {
				continue // within the grace, or in use
			}
			remove = append(remove, cand{e.Addr, t.last})
		}
		p.held = len(entries)
		p.peak = max(p.peak, p.held)
		// Within the cap nothing is removed; beyond it, the least recently used first.
		if excess := len(entries) - p.cap; p.cap > 0 && excess < len(remove) {
			slices.SortFunc(remove, func(a, b cand) int { return a.last.Compare(b.last) })
			remove = remove[:max(excess, 0)]
		}
		p.nmu.Unlock()
		for _, c := range remove {
			select {
			case <-stop:
				return
			default:
			}
			err := n.Delete(c.addr)
			if errors.Is(err, ErrNoAnswer) {
				break // the kernel was slow to answer: the next sweep tries again
			}
			if err != nil {
				p.nmu.Lock()
				p.nerr, p.touched = fmt.Errorf("removing neighbour entries: %w", err), nil
				p.nmu.Unlock()
				return
			}
			p.Removed.Add(1)
		}
		p.Swept.Store(time.Now().UnixNano())
	}
}

// NeighbourUse says whether the prober removes its neighbour entries (RemoveNeighbours, and not
// refused since), why it stopped (err), and the most entries the interface held at one sweep
// since the last call (an entry of any peer the prober exchanged with, or of anything else on
// the interface); the peak starts again from the last sweep's count.
func (p *Prober) NeighbourUse() (removing bool, peak int, err error) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	peak = p.peak
	p.peak = p.held
	return p.touched != nil, peak, p.nerr
}

// Neighbours lists the entries of the probe interface (nil without RemoveNeighbours).
func (p *Prober) Neighbours() ([]netip.Addr, error) {
	p.nmu.Lock()
	n := p.neigh
	p.nmu.Unlock()
	if n == nil {
		return nil, errors.New("no neighbour socket")
	}
	return n.List()
}

// send sends one probe of payload bytes to addr and returns the channel its reply arrives on
// (unregister with done). A send the kernel refuses (a frame above the local interface's MTU:
// EMSGSIZE with Don't-Fragment) returns a nil channel.
func (p *Prober) send(addr netip.AddrPort, payload int, buf []byte) (uint64, chan uint32) {
	seq := p.seq.Add(1)
	ch := make(chan uint32, 1)
	p.mu.Lock()
	p.pending[seq] = ch
	st := p.seenLocked(addr.Addr().Unmap())
	st.sends[st.next%len(st.sends)] = sendRecord{seq, time.Now()}
	st.next++
	echo := st.maxSeq
	p.mu.Unlock()
	header{kind: kindProbe, net: p.id, seq: seq, size: uint32(payload), echo: echo}.encode(buf)
	p.Sent.Add(1)
	if err := p.write(buf[:payload], addr); err != nil {
		p.done(seq)
		return seq, nil
	}
	return seq, ch
}

func (p *Prober) done(seqs ...uint64) {
	p.mu.Lock()
	for _, s := range seqs {
		delete(p.pending, s)
	}
	p.mu.Unlock()
}

// exchange sends a probe of payload bytes up to p.tries times, until one is answered with the
// size sent; it returns the round-trip time of the answered one.
func (p *Prober) exchange(ctx context.Context, addr netip.AddrPort, payload int) (time.Duration, bool) {
	buf := make([]byte, max(payload, headerLen))
	for range p.tries {
		start := time.Now()
		seq, ch := p.send(addr, payload, buf)
		if ch == nil {
			return 0, false
		}
		timer := time.NewTimer(p.timeout)
		select {
		case got := <-ch:
			timer.Stop()
			p.done(seq)
			if int(got) == payload {
				return time.Since(start), true
			}
		case <-timer.C:
			p.done(seq)
		case <-ctx.Done():
			timer.Stop()
			p.done(seq)
			return 0, false
		}
	}
	return 0, false
}

// Check probes one peer: reachability with a small probe, then a full-size frame; when that is
// lost, the largest frame that crosses. A peer that does not answer is OneWay when, since it last
// answered, one of its own probes proved ours lost (see sawProbe), else Unreachable: a fault that
// starts mid-round may read Unreachable for that round before the evidence arrives, never OneWay
// for a path lost both ways.
func (p *Prober) Check(ctx context.Context, peer Peer) Result {
	p.touch(peer.Addr.Addr().Unmap(), 1)
	defer p.touch(peer.Addr.Addr().Unmap(), -1)
	r := Result{Peer: peer, At: time.Now()}
	rtt, ok := p.exchange(ctx, peer.Addr, headerLen)
	if !ok {
		r.Reason = v1beta1.PathUnreachable
		p.mu.Lock()
		st := p.seenLocked(peer.Addr.Addr().Unmap())
		if !st.lost.IsZero() && st.lost.After(st.replied) {
			r.Reason = v1beta1.PathOneWay
		}
		p.mu.Unlock()
		return r
	}
	r.RTT = rtt
	if _, ok := p.exchange(ctx, peer.Addr, udpPayload(p.is4, p.mtu)); ok {
		return r
	}
	r.Reason, r.Largest = v1beta1.PathMTU, p.largest(ctx, peer.Addr)
	return r
}

// largest finds the largest frame below the MTU that crosses to addr: a volley of the ladder's
// sizes, then one of sizes between the largest that crossed and the next that did not.
func (p *Prober) largest(ctx context.Context, addr netip.AddrPort) int {
	small := headerLen + (p.mtu - udpPayload(p.is4, p.mtu))
	var sizes []int
	for _, s := range ladder {
		if s > small && s < p.mtu {
			sizes = append(sizes, s)
		}
	}
	best := p.volley(ctx, addr, sizes)
	hi := p.mtu
	if i := slices.Index(sizes, best); i+1 < len(sizes) {
		hi = sizes[i+1]
	} else if best == 0 && len(sizes) > 0 {
		hi = sizes[0]
	}
	lo := max(best, small)
	if hi-lo > 1 {
		var fine []int
		step := max((hi-lo)/16, 1)
		for s := lo + step; s < hi; s += step {
			fine = append(fine, s)
		}
		best = max(best, p.volley(ctx, addr, fine))
	}
	return best
}

// volley sends one probe of each frame size at once and returns the largest answered (0: none).
func (p *Prober) volley(ctx context.Context, addr netip.AddrPort, frames []int) int {
	if len(frames) == 0 {
		return 0
	}
	type sent struct {
		seq   uint64
		ch    chan uint32
		frame int
	}
	var all []sent
	for _, f := range frames {
		payload := udpPayload(p.is4, f)
		seq, ch := p.send(addr, payload, make([]byte, payload))
		if ch != nil {
			all = append(all, sent{seq, ch, f})
		}
	}
	wait, cancel := context.WithTimeout(ctx, p.timeout) // Done stays closed once the time is up
	defer cancel()
	best := 0
	for _, s := range all {
		select {
		case got := <-s.ch:
			if int(got) == udpPayload(p.is4, s.frame) {
				best = max(best, s.frame)
			}
		case <-wait.Done():
		}
		p.done(s.seq)
	}
	return best
}

// Round checks every peer once, the checks started evenly over spread, and returns the results
// sorted by node.
func (p *Prober) Round(ctx context.Context, peers []Peer, spread time.Duration) []Result {
	out := make([]Result, len(peers))
	var wg sync.WaitGroup
	gap := time.Duration(0)
	if len(peers) > 0 {
		gap = spread / time.Duration(len(peers))
	}
	start := time.Now()
	for i, peer := range peers {
		if wait := time.Until(start.Add(time.Duration(i) * gap)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.Check(ctx, peer)
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// setDontFragment sets Don't-Fragment on every datagram of conn, ignoring the path MTU the kernel
// learnt (IP_PMTUDISC_PROBE): a frame above the local interface's MTU fails to send (EMSGSIZE),
// any other leaves whole or not at all.
func setDontFragment(conn *net.UDPConn, is4 bool) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if is4 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE)
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// Listen opens the probe socket on addr (inside whatever network namespace the calling thread is
// in) with Don't-Fragment set.
func Listen(addr netip.AddrPort) (*net.UDPConn, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	if err := setDontFragment(conn, addr.Addr().Unmap().Is4()); err != nil {
		conn.Close()
		return nil, err
	}
	// Room for bursts of probes and echoes while the reader is descheduled: the default buffer
	// (net.core.rmem_default, 212,992 bytes on most kernels) dropped some at 1,000 probes a second
	// on a loaded machine. The kernel grants at most twice net.core.rmem_max (without
	// CAP_NET_ADMIN, which the agent does not hold); a smaller buffer only means more re-sends.
	_ = conn.SetReadBuffer(ReadBuffer)
	return conn, nil
}

// ReadBuffer is the receive buffer the probe socket asks for.
const ReadBuffer = 4 << 20
