package health

import "time"

// NodeProbe is what one node's report says about when its own results verify a pair: the
// inputs of Pair's unverified verdicts, for admission to index them once per PathHealth.
type NodeProbe struct {
	Node string
	// Usable: the agent reports no problem and completed a round; its results verify pairs while
	// the time is before FreshUntil.
	Usable bool
	// Since is when the agent began probing; RoundStarted when its last completed round began.
	Since, RoundStarted, FreshUntil time.Time
}

// Probes returns every reported node's NodeProbe, in no particular order.
func (h *PathHealth) Probes() []NodeProbe {
	if h == nil {
		return nil
	}
	out := make([]NodeProbe, 0, len(h.nodes))
	for name, n := range h.nodes {
		out = append(out, NodeProbe{Node: name, Usable: n.problem == "" && !n.freshUntil.IsZero(),
			Since: n.since, RoundStarted: n.roundStarted, FreshUntil: n.freshUntil})
	}
	return out
}

// Reported is how many nodes' agents reported on the network: none means no probe agent runs
// there, and the pairs are not judged at all.
func (h *PathHealth) Reported() int {
	if h == nil {
		return 0
	}
	return len(h.nodes)
}
