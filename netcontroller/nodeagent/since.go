package nodeagent

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// FailingSince dates a failing path after a check that sent its first probe at probed found it
// failing for reason. prev is the previous round's entry for the peer when was (the path failed
// in the previous round, and that round was watched, see Watched); checked says the previous
// watched round checked the peer at all. A failure that goes on, no worse (Worsened), keeps prev's
// Since and AfterCheck, whatever the largest frame that crosses (it wanders with the probe's
// search) and whether the peer's own probes happened to arrive in the round (Unreachable and
// OneWay alternate on a path that drops what this node sends); a new one, or one that worsened,
// starts at probed, AfterCheck when the previous round had checked the peer: it began after that
// check. An entry kept without a Since (a report
// of an agent before the field) starts again. The abort rule counts only a failure that began
// after the migration started (health.DecideAbort): first found by a probe sent after the start,
// after a check of the pair. So Since is when that probe was sent: not the round's start (a round
// spreads its probes over its whole interval), nor the moment the round's results were read.
func FailingSince(prev v1beta1.PeerPath, was, checked bool, reason string, probed metav1.MicroTime) (since *metav1.MicroTime, afterCheck, isNew bool) {
	if was && !Worsened(prev.Reason, reason) && prev.Since != nil && !prev.Since.IsZero() {
		kept := *prev.Since
		return &kept, prev.AfterCheck, false
	}
	return &probed, checked, true
}

// Worsened reports whether a failing path found failing for reason after a round that found it
// failing for prev got worse for what this node sends: small frames crossed (MTU) and now nothing
// does (Unreachable or OneWay). Unreachable and OneWay say the same of this direction (nothing
// sent from here reaches the peer) and differ only in whether the peer's probes arrived here, the
// peer's own direction, which the peer's report judges; a path from either to MTU got better. A
// reason this agent does not know is worse than any other reason.
func Worsened(prev, reason string) bool {
	rank := func(r string) int {
		switch r {
		case v1beta1.PathMTU:
			return 1
		case v1beta1.PathUnreachable, v1beta1.PathOneWay:
			return 2
		}
		return 3
	}
	return prev != reason && (rank(reason) > rank(prev) || rank(reason) == 3)
}

// Watched reports whether a round that started at started follows the round that found the
// previous failures (it started at seen; zero: none) closely enough that the paths were watched
// in between: within health.SilentAfter of the report's interval, the bound past which the
// manager calls the agent silent. An agent held or hung longer did not see what happened
// meanwhile (a path repaired and broken again), so a failure it finds again starts anew.
func Watched(seen, started time.Time, interval time.Duration) bool {
	return !seen.IsZero() && interval > 0 && started.Sub(seen) <= health.SilentAfter(interval)
}
