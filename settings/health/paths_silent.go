package health

import (
	"fmt"
	"time"

	"github.com/migranet/migranet/settings/v1beta1"
)

// ReasonAgentSilent names a node whose probe agent has finished no round within its bound
// (SilentAfter of its interval): hung, crashed or not running. It is the Healthy condition's
// reason (False) when no path fails, the reason of the Warning event naming the node, and the
// word admission, preflight and `migranet status` use for it. Not Unknown: an agent that starts
// and has not finished its first round yet is a slow starter, not silent, until the same bound
// has passed since it began.
const ReasonAgentSilent = "AgentSilent"

// silence is when r's agent last finished a round — its last round's end, or, before the first
// or when it reports a problem instead, when it wrote the report (an agent that finds a problem
// writes one every round, its since then) — and from when it is silent. The paths' results of a
// report without a problem go stale at the same moment. A report no agent rewrites (NotMeasured,
// the local cluster's stand-in for simulated networks) is never silent.
func silence(r *v1beta1.PathReport, interval time.Duration) (last, silentAt time.Time) {
	last = r.Since.Time
	if r.LastRound != nil && r.LastRound.Completed.After(last) {
		last = r.LastRound.Completed.Time
	}
	if r.Problem == v1beta1.ProbeNotMeasured {
		return last, time.Time{}
	}
	return last, last.Add(SilentAfter(interval))
}

// silent reports whether the node's agent is silent at now.
func (p pathNode) silent(now time.Time) bool { return !p.silentAt.IsZero() && !now.Before(p.silentAt) }

// Silent reports whether n's probe agent has finished no round within its bound at now. Its own
// results then verify nothing; a peer's fresh report that lists it still fails their pair (the
// peers' probes towards it are evidence of their own).
func (h *PathHealth) Silent(n string, now time.Time) bool {
	if h == nil {
		return false
	}
	p, ok := h.nodes[n]
	return ok && p.silent(now)
}

// SilentNodes returns the nodes of nodes whose agent is silent at now, in the order given.
func (h *PathHealth) SilentNodes(nodes []string, now time.Time) []string {
	var out []string
	for _, n := range nodes {
		if h.Silent(n, now) {
			out = append(out, n)
		}
	}
	return out
}

// silentMessage says that n's agent is silent, since when, and what still counts.
func silentMessage(n string, p pathNode) string {
	return fmt.Sprintf("%s's probe agent is silent (%s): no round finished since %s (bound %s): hung, crashed or not running; "+
		"only its peers' probes towards it count", n, ReasonAgentSilent, p.lastRound.UTC().Format(time.RFC3339), p.silentAt.Sub(p.lastRound))
}
