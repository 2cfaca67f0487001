package nodeagent

import (
	"context"
	"errors"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Timings of the shaping loop.
const (
	// shapeTick is how often the loop samples migration0's counters and checks the budget; a
	// changed budget is applied at the next tick, or at once when the agent's cache reports it.
	shapeTick = time.Second
	// shapeVerify is how often the loop re-installs the budget in force even when it did not
	// change, mending what someone removed by hand.
	shapeVerify = 30 * time.Second
)

// shaping keeps one session's migration0 shaped to the node's budget and measures what crosses
// it, in a goroutine of its own: a round lasts most of the interval, and neither waits for the
// other.
type shaping struct {
	sh      *Shaper
	node    string
	desired func(context.Context) (target, error)
	wake    <-chan struct{}
	metrics *Metrics

	mu     sync.Mutex
	state  v1beta1.MigrationTraffic // budget, shaping, message, queue, since
	window window
	last   Counters
	stop   context.CancelFunc
	done   chan struct{}
}

// window is what the loop gathered since the last report.
type window struct {
	start           Counters
	peakIn, peakOut int64
}

// startShaping starts the loop on sh: desired reads the node's budget, wake says it may have
// changed.
func startShaping(ctx context.Context, sh *Shaper, node string, desired func(context.Context) (target, error), wake <-chan struct{}, m *Metrics) *shaping {
	ctx, cancel := context.WithCancel(ctx)
	s := &shaping{sh: sh, node: node, desired: desired, wake: wake, metrics: m, stop: cancel, done: make(chan struct{})}
	s.state.Shaping = v1beta1.ShapingOff
	if c, err := sh.Counters(); err == nil {
		s.last, s.window.start = c, c
	}
	go s.run(ctx)
	return s
}

// close stops the loop; what it installed stays (it bounds the node's migrations while no agent
// runs, and goes with the namespace).
func (s *shaping) close() {
	s.stop()
	<-s.done
	s.sh.Close()
}

func (s *shaping) run(ctx context.Context) {
	defer close(s.done)
	log := ctrl.LoggerFrom(ctx).WithValues("node", s.node)
	tick := time.NewTicker(shapeTick)
	defer tick.Stop()
	var applied *target
	var verified time.Time
	for {
		t, err := s.desired(ctx)
		switch {
		case err != nil:
			log.Info("cannot read the node's migration budget; keeping what is installed", "error", err.Error())
		case applied == nil || *applied != t || time.Since(verified) > shapeVerify:
			changed := applied == nil || *applied != t
			s.apply(ctx, t, changed)
			applied, verified = &t, time.Now()
		}
		s.sample()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// apply installs t (or removes the shaping for no budget) and records the outcome.
func (s *shaping) apply(ctx context.Context, t target, changed bool) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", s.node)
	var st v1beta1.MigrationTraffic
	st.BudgetBytesPerSecond, st.Override = t.rate, t.override
	if t.rate == 0 {
		st.Shaping = v1beta1.ShapingOff
		if err := s.sh.Remove(); err != nil && !errors.Is(err, ErrNoInterface) {
			st.Shaping, st.Message = v1beta1.ShapingFailed, "removing the shaping: "+err.Error()
		}
	} else if shaped, err := s.sh.Apply(t.rate); err != nil {
		st.Shaping, st.Message = v1beta1.ShapingFailed, err.Error()
	} else {
		st.Shaping, st.Queue = v1beta1.ShapingEnforced, shaped.Leaf
	}
	s.mu.Lock()
	prev := s.state
	if changed || prev.Shaping != st.Shaping || prev.Message != st.Message {
		now := metav1.NowMicro()
		st.Since = &now
		log.Info("migration budget", "bytesPerSecond", t.rate, "override", t.override, "shaping", st.Shaping, "queue", st.Queue, "message", st.Message)
	} else {
		st.Since = prev.Since
	}
	s.state = st
	s.mu.Unlock()
	s.metrics.budgetState(s.node, &st)
}

// sample reads the counters: the last second's rates feed the window's peaks, the deltas the
// metrics.
func (s *shaping) sample() {
	c, err := s.sh.Counters()
	if err != nil {
		return
	}
	s.mu.Lock()
	prev := s.last
	s.last = c
	if c.In < s.window.start.In || c.Out < s.window.start.Out { // migration0 was made anew
		s.window = window{start: c}
	}
	if dt := c.At.Sub(prev.At).Seconds(); dt > 0 && c.In >= prev.In && c.Out >= prev.Out {
		s.window.peakIn = max(s.window.peakIn, int64(float64(c.In-prev.In)/dt))
		s.window.peakOut = max(s.window.peakOut, int64(float64(c.Out-prev.Out)/dt))
	}
	s.mu.Unlock()
	s.metrics.traffic(s.node, prev, c)
}

// report is the traffic since the last report, and starts a new window.
func (s *shaping) report() *v1beta1.MigrationTraffic {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.state
	w, c := s.window, s.last
	if dt := c.At.Sub(w.start.At).Seconds(); dt > 0 && c.In >= w.start.In && c.Out >= w.start.Out {
		out.WindowSeconds = int32(dt + 0.5)
		out.InBytesPerSecond = int64(float64(c.In-w.start.In) / dt)
		out.OutBytesPerSecond = int64(float64(c.Out-w.start.Out) / dt)
		out.PeakInBytesPerSecond, out.PeakOutBytesPerSecond = w.peakIn, w.peakOut
		out.HeldIn = int64(sub(c.Shaped[DirIn].Overlimits, w.start.Shaped[DirIn].Overlimits))
		out.HeldOut = int64(sub(c.Shaped[DirOut].Overlimits, w.start.Shaped[DirOut].Overlimits))
	}
	s.window = window{start: c}
	return &out
}

// sub is a - b for counters that may have started over (b > a: a since then).
func sub(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return a - b
}
