package netcontroller

import (
	"context"
	"net/netip"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/migranet/migranet/settings"
)

// When the current range's pool is checked for leaked allocations (releaseLeaks). Each check
// costs one GET of the pool (plus one list of the KubeVirt namespace's pods and one update when
// something leaked), so it runs when a leak can have appeared or starts to matter, never per
// admission and not on every pod event:
//   - on the first reconcile of a range (a new value, a restarted or newly elected manager);
//   - when a virt-handler pod seen before has vanished from the cache (a deletion: a force delete
//     or a lost node is what leaks), at most every PoolCheckSpacing;
//   - every PoolCheckNearFull while the pool is near full (the IPCapacity threshold);
//   - otherwise every PoolCheckInterval, as a backstop.
const (
	PoolCheckSpacing  = 2 * time.Second
	PoolCheckNearFull = 15 * time.Second
	PoolCheckInterval = 10 * time.Minute
)

// poolCheck is the state of the leak check between reconciles.
type poolCheck struct {
	mu   sync.Mutex
	rng  netip.Prefix
	last time.Time // when the pool was last checked; zero: never for rng
	// held are the addresses whereabouts held after the last check (pool and reservations).
	held map[netip.Addr]bool
	// retry: the last check failed (a conflicting write, an API error); run again soon.
	retry bool
	// seen are the virt-handler pods (namespace/name) in the cache since the last check.
	seen map[string]bool
}

// checkPool runs the leak check of the current range's pool when it is due (see PoolCheckSpacing)
// and sets obs.Used to the addresses held: those whereabouts held at the last check together with
// those virt-handlers report now (the pool also counts leaked and other pods' allocations, so a
// leak shows in the capacity before it bites; a replacement's address, taken since, is in the
// report). It returns when to reconcile again for the next check. A conflicting update is
// retried after PoolCheckSpacing.
func (r *Controller) checkPool(ctx context.Context, m *settings.Network, in Input, obs *Observation) (time.Duration, error) {
	reported := reportedAddrs(in)
	held, requeue, err := r.checkPoolDue(ctx, m, in, reported)
	obs.Used = unionCount(held, reported)
	return requeue, err
}

// unionCount is the number of distinct addresses in a and b.
func unionCount(a, b map[netip.Addr]bool) int64 {
	n := int64(len(a))
	for addr := range b {
		if !a[addr] {
			n++
		}
	}
	return n
}

// checkPoolDue runs the check when due and returns what whereabouts held at the last one (none
// without a check), with the delay to the next.
func (r *Controller) checkPoolDue(ctx context.Context, m *settings.Network, in Input, reported map[netip.Addr]bool) (map[netip.Addr]bool, time.Duration, error) {
	st := &r.pool
	st.mu.Lock()
	defer st.mu.Unlock()
	if r.APIReader == nil || m == nil || !in.Range.IsValid() {
		st.rng, st.seen, st.held = netip.Prefix{}, nil, nil
		return nil, 0, nil
	}
	if st.rng != in.Range.Masked() {
		st.rng, st.last, st.held, st.seen = in.Range.Masked(), time.Time{}, nil, nil
	}
	present := make(map[string]bool, len(in.Pods))
	vanished := false
	for _, p := range in.Pods {
		present[p.Namespace+"/"+p.Name] = true
	}
	for ref := range st.seen {
		vanished = vanished || !present[ref]
	}
	if st.seen == nil {
		st.seen = map[string]bool{}
	}
	for ref := range present {
		st.seen[ref] = true
	}

	now := time.Now()
	if wait := nextPoolCheck(st.last, now, vanished || st.retry, nearFull(m, unionCount(st.held, reported))); wait > 0 {
		return st.held, wait, nil
	}
	held, err := r.releaseLeaks(ctx, st.rng, m.Assignable, func(ns, name string) bool { return present[ns+"/"+name] })
	r.Metrics.step(StepCleanup, err)
	st.last, st.retry = now, err != nil
	if apierrors.IsConflict(err) {
		// whereabouts or another writer changed the pool since it was read: read it again.
		return st.held, PoolCheckSpacing, nil
	}
	if err != nil {
		return st.held, PoolCheckSpacing, err
	}
	st.held, st.seen = held, present
	return held, nextPoolCheck(now, now, false, nearFull(m, unionCount(held, reported))), nil
}

// nextPoolCheck is how long after now the pool is due for a check (≤ 0: now), given the last check
// (zero: none yet for this range), whether something calls for a prompt one (a virt-handler pod
// vanished, or the last check failed) and whether the pool is near full.
func nextPoolCheck(last, now time.Time, prompt, nearFull bool) time.Duration {
	if last.IsZero() {
		return 0
	}
	interval := PoolCheckInterval
	switch {
	case prompt:
		interval = PoolCheckSpacing
	case nearFull:
		interval = PoolCheckNearFull
	}
	return interval - now.Sub(last)
}

// nearFull is the IPCapacity condition's threshold: fewer than 2, or fewer than 10 %, of the
// usable addresses free.
func nearFull(m *settings.Network, used int64) bool {
	return countAddresses(m, used).low()
}
