package health

import "time"

// NextStale is the first moment after now at which a node's results go stale (and its failing
// directions stop counting), or the zero time when none will: results turn unverified then with no
// change of any report, so whoever sums them up looks again at that moment.
func (h *PathHealth) NextStale(now time.Time) time.Time {
	if h == nil {
		return time.Time{}
	}
	var next time.Time
	for _, n := range h.nodes {
		if n.freshUntil.After(now) && (next.IsZero() || n.freshUntil.Before(next)) {
			next = n.freshUntil
		}
	}
	return next
}
