package nodeagent

import (
	"testing"
	"time"

	"github.com/migranet/migranet/settings/health"
)

// TestPeriod: a round's period is the interval until the probe rate limit stretches it over
// many peers (two probes a peer at MaxRate, plus the last check), and the report names it in
// whole seconds, rounded up. Near miss: the peer count at which the stretched round just fills
// the interval.
// Catches: a bound hard-coded on the interval (a round of 5,000 peers at 200 probes a second
// lasts 53 s: an agent working through it would be called stuck after 60 s, and restarted again
// and again), the last check's budget left out, seconds rounded down.
func TestPeriod(t *testing.T) {
	c := Config{Interval: 20 * time.Second, Timeout: time.Second, Tries: 3, MaxRate: 200}
	for _, tc := range []struct {
		peers int
		want  time.Duration
		secs  int32
	}{
		{0, 20 * time.Second, 20},
		{100, 20 * time.Second, 20},
		{1500, 20 * time.Second, 20}, // 15 s of probes + 5 s for the last check: exactly the interval
		{1501, 20*time.Second + 10*time.Millisecond, 21},
		{5000, 55 * time.Second, 55},
	} {
		got := c.Period(tc.peers)
		if got != tc.want {
			t.Errorf("Period(%d) = %s, want %s", tc.peers, got, tc.want)
		}
		if s := seconds(got); s != tc.secs {
			t.Errorf("seconds(Period(%d)) = %d, want %d", tc.peers, s, tc.secs)
		}
		if got < c.spread(tc.peers) {
			t.Errorf("Period(%d) = %s is shorter than the round's spread %s", tc.peers, got, c.spread(tc.peers))
		}
	}
}

// TestWatchdog: the liveness check fails once no round has finished within the bound of the
// round in progress, from the moment the bound is reached (a round that finishes exactly at the
// bound is too late, as a report whose round completed exactly SilentAfter ago is stale), and a
// finished round or a longer round's bound makes it live again.
// Catches: an off-by-one at the bound, a bound measured from the round's start instead of the
// last finish, Expect ignored (a stretched round called stuck).
func TestWatchdog(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	bound := health.SilentAfter(4 * time.Second)
	for _, tc := range []struct {
		name string
		step func(w *Watchdog)
		now  time.Time
		live bool
	}{
		{"just started", func(*Watchdog) {}, t0, true},
		{"a nanosecond before the bound", func(*Watchdog) {}, t0.Add(bound - time.Nanosecond), true},
		{"at the bound", func(*Watchdog) {}, t0.Add(bound), false},
		{"a round finished since", func(w *Watchdog) { w.Finished(t0.Add(10 * time.Second)) }, t0.Add(bound + time.Second), true},
		{"a round finished exactly at the bound", func(w *Watchdog) { w.Finished(t0.Add(10 * time.Second)) }, t0.Add(10*time.Second + bound), false},
		{"a longer round expected", func(w *Watchdog) { w.Expect(health.SilentAfter(55 * time.Second)) }, t0.Add(time.Minute), true},
		{"a shorter round expected", func(w *Watchdog) { w.Expect(time.Second) }, t0.Add(time.Second), false},
	} {
		w := NewWatchdog(t0, bound)
		tc.step(w)
		if err := w.Check(tc.now); (err == nil) != tc.live {
			t.Errorf("%s: Check = %v, want live %t", tc.name, err, tc.live)
		}
	}
}
