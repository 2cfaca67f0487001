package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/test/nodenet"
)

// The proxy keys of KubeVirt v1.8.4's migration proxy (pkg/virt-handler/migration-proxy):
// the target listens once per unix socket it forwards to, and advertises each listener's port in
// targetDirectMigrationNodePorts mapped to the key: 0 for virtqemud's socket (libvirt's
// peer-to-peer control connection), LibvirtDirectMigrationPort for QEMU's memory stream,
// LibvirtBlockMigrationPort for the disks of a block migration.
const (
	ProxyKeyLibvirt         = 0
	ProxyKeyDirectMigration = 49152
	ProxyKeyBlockMigration  = 49153
)

// DowntimeLimit is QEMU's default downtime-limit (300 ms), which KubeVirt v1.8.4 leaves alone: the
// pre-copy stops the guest for its last round once the dirty memory left fits in this much time at
// the throughput the last round reached.
const DowntimeLimit = 300 * time.Millisecond

// StreamPlan is what a stream sends: the guest memory, the rate at which the running guest dirties
// it again, and the cap of the link (the stand-in's, or bandwidthPerMigration when lower).
type StreamPlan struct {
	// Memory is the guest memory in bytes (the first round).
	Memory int64
	// DirtyRate is how many bytes of memory the running guest dirties per second (each round
	// after the first sends what the round before it left dirty, at most Memory).
	DirtyRate int64
	// Bandwidth caps the stream in bytes per second; 0: no cap.
	Bandwidth int64
}

// NextRound is the pre-copy's decision at the end of a round of sent bytes that took d: the memory
// dirtied meanwhile (DirtyRate × d, at most Memory) is the next round; it is the last one (the
// guest stopped for it) once it fits in DowntimeLimit at the round's throughput, or when the guest
// no longer runs on the source (post-copy, paused). hold keeps a migration from converging: the
// guest dirties memory as fast as the stream carries it, so each round is as large as the one
// before.
func (p StreamPlan) NextRound(sent int64, d time.Duration, hold, stopped bool) (next int64, last bool) {
	if hold && !stopped {
		return sent, false
	}
	dirty := min(p.Memory, int64(float64(p.DirtyRate)*d.Seconds()))
	if stopped || dirty == 0 {
		return dirty, true
	}
	rate := float64(sent) / max(d.Seconds(), 1e-3)
	return dirty, float64(dirty) <= rate*DowntimeLimit.Seconds()
}

// Stream is one migration's memory stream between two virt-handler sandboxes over their
// migration0 links, both ends in this process: the target's listeners (bound to its migration0
// address, a port per proxy key, as the patched migration proxy binds them; upstream v1.8.4 binds
// every address) count what arrives; the source dials from its migration0 address and sends the
// rounds of the plan, paced to the cap; the source's Monitor looks at the bytes left every
// MonitorSleepPeriod and aborts, switches or pauses as KubeVirt's does. Plain TCP (ListenStream,
// Start), or through the patched migration proxy pair (ListenStreamVia, StartVia; via.go): then the
// stand-in's "QEMU" ends talk to the two nodes' proxies over unix sockets, as QEMU and libvirt talk
// to virt-handler's, and the proxies carry the stream between the migration0 addresses. The memory
// carries a known content (memory.go), checked as it arrives: a byte changed on the way fails the
// migration.
type Stream struct {
	plan StreamPlan
	vmi  types.UID // the VMI migrating

	listeners []net.Listener
	ports     map[string]int
	via       *streamVia // the proxy pair, nil for plain TCP

	delivered atomic.Int64 // bytes of memory that crossed (the target's count)
	sent      atomic.Int64 // bytes written by the source
	target    atomic.Int64 // bytes to deliver by the end of the current round

	hold atomic.Bool

	mu        sync.Mutex
	cancel    context.CancelFunc
	conns     []net.Conn
	started   bool
	closed    bool
	logged    bool
	began     time.Time
	endedAt   time.Time
	connected bool // the target accepted the memory stream (the domain reached it)
	done      bool // every round delivered
	failure   string
	mode      kubevirtv1.MigrationMode
	ended     chan struct{} // closed once the stream ended
	endOnce   sync.Once
}

// StreamReport is what the source's virt-handler learns of its stream.
type StreamReport struct {
	Started, Connected, Done bool
	// Failure is the failure reason when the stream ended without completing.
	Failure string
	// Mode is the mode the monitor switched to (PostCopy, Paused), else "".
	Mode kubevirtv1.MigrationMode
	// Delivered and Sent are the bytes that crossed and that the source wrote.
	Delivered, Sent int64
	// Took is the time from the start to the end (so far, while it runs).
	Took time.Duration
	// Via says the stream crossed the patched proxy pair; ProxyBytes is then both proxies'
	// kubevirt_vmi_migration_proxy_transferred_bytes_total of the migration per
	// "side/direction/port_key", read as the stream closed (empty before).
	Via        bool
	ProxyBytes map[string]float64
}

// ListenStream opens the target's listeners in sandbox ns on addr, one per key (0 and
// ProxyKeyDirectMigration; ProxyKeyBlockMigration too for a block migration), and counts what
// arrives on the memory stream.
func ListenStream(ns nodenet.NS, addr netip.Addr, block bool) (*Stream, error) {
	s := &Stream{ports: map[string]int{}, ended: make(chan struct{})}
	keys := []int{ProxyKeyLibvirt, ProxyKeyDirectMigration}
	if block {
		keys = append(keys, ProxyKeyBlockMigration)
	}
	for _, key := range keys {
		ln, err := nodenet.ListenIn(ns, net.JoinHostPort(addr.String(), "0"))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("listening on %s in %s: %w", addr, ns, err)
		}
		s.listeners = append(s.listeners, ln)
		s.ports[strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)] = key
		go s.accept(ln, key == ProxyKeyDirectMigration)
	}
	return s, nil
}

// Ports is targetDirectMigrationNodePorts: each listener's port → its proxy key.
func (s *Stream) Ports() map[string]int { return s.ports }

// accept takes connections on one listener: the memory stream's bytes are counted, others read
// and dropped.
func (s *Stream) accept(ln net.Listener, memory bool) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		if memory {
			s.connected = true
		}
		s.mu.Unlock()
		go func() {
			defer c.Close()
			if !memory {
				_, _ = io.Copy(io.Discard, c)
				return
			}
			buf := make([]byte, 256<<10)
			for {
				n, err := c.Read(buf)
				if off := s.delivered.Load(); n > 0 {
					if bad := firstDifference(off, buf[:n]); bad >= 0 {
						s.finish(fmt.Sprintf("%sthe target's QEMU could not load the migration stream: byte %d arrived altered", failedPrefix, bad))
						return
					}
				}
				s.delivered.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
}

// Start dials the target (its address, at the port of each key) from the source's sandbox ns and
// address src, sends the plan and runs the monitor with opts. It returns at once; Report tells how
// it goes. A second call, or one after Close, does nothing.
func (s *Stream) Start(ns nodenet.NS, src, target netip.Addr, plan StreamPlan, opts MigrationOptions, dataGB int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.startLocked(plan, opts, dataGB, func(ctx context.Context, key int) (net.Conn, error) {
		return nodenet.DialIn(ctx, ns, src, net.JoinHostPort(target.String(), s.port(key)), 0)
	})
}

// startLocked starts the sender, which dials each key with dial, and the monitor. s.mu held.
func (s *Stream) startLocked(plan StreamPlan, opts MigrationOptions, dataGB int64, dial func(ctx context.Context, key int) (net.Conn, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	s.started, s.cancel, s.plan, s.began = true, cancel, plan, time.Now()
	s.target.Store(plan.Memory)
	go s.run(ctx, dial)
	go s.monitor(ctx, NewMonitor(opts, dataGB, time.Now()))
}

// Plan is what the stream sends (zero before Start).
func (s *Stream) Plan() StreamPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plan
}

// SetHold holds the migration (HandlerHoldAnnotation) or lets it converge.
func (s *Stream) SetHold(hold bool) { s.hold.Store(hold) }

// SetMode records a mode the scenario switched to (post-copy once the domain reached the target).
func (s *Stream) SetMode(m kubevirtv1.MigrationMode) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// Report is the stream's state.
func (s *Stream) Report() StreamReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := StreamReport{Started: s.started, Connected: s.connected, Done: s.done, Failure: s.failure, Mode: s.mode,
		Delivered: s.delivered.Load(), Sent: s.sent.Load(), Via: s.via != nil}
	if s.via != nil {
		r.ProxyBytes = s.via.final
	}
	if s.started {
		r.Took = time.Since(s.began)
		if !s.endedAt.IsZero() {
			r.Took = s.endedAt.Sub(s.began)
		}
	}
	return r
}

// logEnd reports true the first time it is called: the stand-in logs a stream's end once.
func (s *Stream) logEnd() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.logged
	s.logged = true
	return first
}

// Abort ends the stream (the abort virt-controller requested, or the monitor's): its connections
// closed at once. It reports whether the stream was still running; a stream that already ended
// cannot be aborted. Like the stand-in before it (and unlike libvirt, which refuses to abort a
// post-copy job), it aborts a migration in post-copy too: migranet's webhook is what keeps such a
// cancel from reaching KubeVirt.
func (s *Stream) Abort() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.failure != "" {
		return false
	}
	s.failure = "Live migration aborted "
	s.stopLocked()
	s.endOnce.Do(func() { s.endedAt = time.Now(); close(s.ended) })
	return true
}

// Close ends the stream and closes the target's listeners (finalCleanup, StopTargetListener);
// through the proxy pair, it records the proxies' byte counts, then stops both nodes' listeners of
// the migration (StopSourceListener, StopTargetListener), which drops their metric series.
func (s *Stream) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.stopLocked()
	for _, ln := range s.listeners {
		ln.Close()
	}
	via := s.via
	s.mu.Unlock()
	if via != nil {
		final := via.stop()
		s.mu.Lock()
		via.final = final
		s.mu.Unlock()
	}
}

func (s *Stream) stopLocked() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, c := range s.conns {
		c.Close()
	}
}

// finish records the stream's end once: done, or failed with reason.
func (s *Stream) finish(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.failure != "" {
		return
	}
	if reason == "" {
		s.done = true
	} else {
		s.failure = reason
		s.stopLocked()
	}
	s.endOnce.Do(func() { s.endedAt = time.Now(); close(s.ended) })
}

// failedPrefix starts the failure reason of a migration libvirt's MigrateToURI3 returned with an
// error ("Live migration failed %v", startMonitor in live-migration-source.go).
const failedPrefix = "Live migration failed error encountered during MigrateToURI3 libvirt api call: "

// run dials and sends the rounds. A dial or write that fails ends the migration as libvirt's
// MigrateToURI3 returns it, and so does the memory connection closed under the sender (a proxy or
// the target gone mid-stream).
func (s *Stream) run(ctx context.Context, dial func(ctx context.Context, key int) (net.Conn, error)) {
	conns := map[int]net.Conn{}
	for _, key := range []int{ProxyKeyLibvirt, ProxyKeyDirectMigration} {
		c, err := dial(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				s.finish(failedPrefix + err.Error())
			}
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		conns[key] = c
	}
	go func() {
		// Nothing comes back on the memory connection but its end: one before every round
		// arrived breaks the migration.
		_, err := io.Copy(io.Discard, conns[ProxyKeyDirectMigration])
		if ctx.Err() == nil {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			s.finish(failedPrefix + "the migration connection closed: " + err.Error())
		}
	}()
	if err := s.send(ctx, conns[ProxyKeyDirectMigration]); err != nil {
		if ctx.Err() == nil {
			s.finish(failedPrefix + err.Error())
		}
		return
	}
	s.finish("")
}

// port is the target's listener port of proxy key, "" when none.
func (s *Stream) port(key int) string {
	for p, k := range s.ports {
		if k == key {
			return p
		}
	}
	return ""
}

// send writes the rounds on c, each paced to the cap, and waits for each to arrive whole before
// the next is decided.
func (s *Stream) send(ctx context.Context, c net.Conn) error {
	const chunk = 256 << 10
	start := time.Now()
	round, last := s.plan.Memory, false
	for {
		roundStart := time.Now()
		target := s.target.Load()
		for w := s.sent.Load(); w < target; w = s.sent.Load() {
			buf := memoryAt(w, min(chunk, target-w))
			n := int64(len(buf))
			if bw := s.plan.Bandwidth; bw > 0 {
				due := start.Add(time.Duration(float64(w+n) / float64(bw) * float64(time.Second)))
				if err := sleepCtx(ctx, time.Until(due)); err != nil {
					return err
				}
			}
			m, err := c.Write(buf)
			s.sent.Add(int64(m))
			if err != nil {
				return err
			}
		}
		for s.delivered.Load() < target {
			if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
				return err
			}
		}
		if last {
			return nil
		}
		s.mu.Lock()
		stopped := s.mode == kubevirtv1.MigrationPostCopy || s.mode == kubevirtv1.MigrationPaused
		s.mu.Unlock()
		round, last = s.plan.NextRound(round, time.Since(roundStart), s.hold.Load(), stopped)
		if round == 0 {
			return nil
		}
		s.target.Add(round)
	}
}

// Remaining is the job's bytes left as QEMU counts them: what the current round has yet to
// deliver (the memory dirtied meanwhile counts from the next round on).
func (s *Stream) Remaining() int64 { return max(0, s.target.Load()-s.delivered.Load()) }

// monitor looks at the job every MonitorSleepPeriod until the stream ends.
func (s *Stream) monitor(ctx context.Context, m *Monitor) {
	t := time.NewTicker(MonitorSleepPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ended:
			return
		case now := <-t.C:
			s.mu.Lock()
			mode := s.mode
			s.mu.Unlock()
			switch action, reason := m.Observe(now, uint64(s.Remaining()), mode); action {
			case MonitorAbort:
				s.finish(reason)
				return
			case MonitorStartPostCopy:
				s.SetMode(kubevirtv1.MigrationPostCopy)
			case MonitorPause:
				s.SetMode(kubevirtv1.MigrationPaused)
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
