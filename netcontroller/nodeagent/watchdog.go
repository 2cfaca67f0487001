package nodeagent

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Watchdog tells whether the agent's rounds keep finishing. The agent's liveness check
// (/healthz) fails once no round has finished within the bound of the round in progress —
// health.SilentAfter of the round's period (Config.Period for its peers), the same bound after
// which migranet names the node AgentSilent — so that the kubelet restarts an agent stuck in a
// round. A round here is one pass of the agent's loop: locating virt-handler, probing, writing the
// report; a pass that finds a problem (no virt-handler, no migration0) finishes too.
type Watchdog struct {
	mu sync.Mutex
	// last is when the last round finished, the watchdog's start before the first.
	last  time.Time
	bound time.Duration
}

// NewWatchdog starts a watchdog at start with the bound of a first round.
func NewWatchdog(start time.Time, bound time.Duration) *Watchdog {
	return &Watchdog{last: start, bound: bound}
}

// Expect sets the bound of the round in progress (its peers are known once it has begun).
func (w *Watchdog) Expect(bound time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bound = bound
}

// Finished records a round finished at.
func (w *Watchdog) Finished(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = at
}

// State returns when the last round finished and the bound of the round in progress.
func (w *Watchdog) State() (last time.Time, bound time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.bound
}

// Check is nil while a round has finished within the bound before now: silent from last + bound
// on, as health.PathHealth judges the agent's report.
func (w *Watchdog) Check(now time.Time) error {
	last, bound := w.State()
	if now.Before(last.Add(bound)) {
		return nil
	}
	return fmt.Errorf("no probe round finished since %s (%s ago; bound %s, 3 of the round's periods): the agent is stuck",
		last.UTC().Format(time.RFC3339), now.Sub(last).Round(time.Second), bound)
}

// Live is the liveness check: Check at the time of the request.
func (w *Watchdog) Live(*http.Request) error { return w.Check(time.Now()) }
