package health

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/migranet/migranet/settings/v1beta1"
)

// StaleAfterRounds is how many of its intervals a report may go without a completed round before
// its results are stale: stale results verify nothing and refuse nothing.
const StaleAfterRounds = 3

// SilentAfter is how long a probe agent whose rounds start every interval (the report's
// IntervalSeconds: its --interval, or longer when its probe rate limit stretches a round over
// many peers) may go without finishing one: then its results are stale, migranet names the node
// AgentSilent, and the agent's own liveness check fails so that the kubelet restarts it. The one
// bound of all three.
func SilentAfter(interval time.Duration) time.Duration { return StaleAfterRounds * interval }

// defaultInterval is the interval assumed for a report that names none.
const defaultInterval = 20 * time.Second

// PathHealth is the migration paths between nodes as the probe agents' PathReports of one network
// tell them. It is built once per change of the reports and immutable after: admission reads it
// without locks. Nothing in it grows with the number of healthy pairs.
type PathHealth struct {
	// Network is the NAD (namespace/name) the reports were for.
	Network string
	nodes   map[string]pathNode
	// faults holds each failing direction under both of its nodes.
	faults map[string][]PathFault
}

// pathNode is what one node's report says about the node itself.
type pathNode struct {
	since, roundStarted, freshUntil time.Time
	// lastRound is when the agent last finished a round (its report's since before the first);
	// silentAt when it is silent unless it finishes another (zero: never judged silent).
	lastRound, silentAt time.Time
	problem, message    string
}

// PathFault is one failing direction of a path, as its source's report says.
type PathFault struct {
	From, To string
	// Reason is v1beta1.PathUnreachable, PathOneWay or PathMTU.
	Reason string
	// MTU is the frame size probed; Largest, for PathMTU, the largest frame that crossed.
	MTU, Largest int
	// Round is when the round that found the fault started (the reporting node's last round).
	Round time.Time
	// Since is when the probe that first found this failure was sent (PeerPath.Since; zero when
	// the report does not say); AfterCheck that a check of the pair came before it
	// (PeerPath.AfterCheck).
	Since      time.Time
	AfterCheck bool
	freshUntil time.Time
}

// Message is the fault in one actionable line, naming both nodes.
func (f PathFault) Message() string { return PathMessage(f.From, f.To, f.Reason, f.MTU, f.Largest) }

// PathMessage words a failing direction from → to: what failed and what to check.
func PathMessage(from, to, reason string, mtu, largest int) string {
	switch reason {
	case v1beta1.PathMTU:
		crossed := "none did"
		if largest > 0 {
			crossed = fmt.Sprintf("largest that crossed: %d", largest)
		}
		return fmt.Sprintf("%d-byte frames from %s to %s do not arrive (%s); check the uplink MTU of both nodes and of the switch ports between them", mtu, from, to, crossed)
	case v1beta1.PathOneWay:
		return fmt.Sprintf("packets from %s do not reach %s while %s's own probes arrive; check firewall rules on both nodes for the migration network", from, to, to)
	}
	return fmt.Sprintf("no probe from %s reaches %s and nothing comes back; check that both nodes' uplinks are up and on the same switch and VLAN", from, to)
}

// Paths builds the health of network from the reports; reports of other networks are ignored.
func Paths(network string, reports []*v1beta1.PathReport) *PathHealth {
	h := &PathHealth{Network: network, nodes: map[string]pathNode{}, faults: map[string][]PathFault{}}
	for _, r := range reports {
		if r == nil || r.Network != network {
			continue
		}
		interval := time.Duration(r.IntervalSeconds) * time.Second
		if interval <= 0 {
			interval = defaultInterval
		}
		n := pathNode{since: r.Since.Time, problem: r.Problem, message: r.Message}
		n.lastRound, n.silentAt = silence(r, interval)
		// A round that began before the agent began probing this network from this address (kept
		// across a re-attachment) says nothing about it: the node has not completed a round yet.
		if r.LastRound != nil && r.Problem == "" && !r.LastRound.Started.Time.Before(r.Since.Time) {
			n.roundStarted = r.LastRound.Started.Time
			n.freshUntil = r.LastRound.Completed.Add(SilentAfter(interval))
		}
		h.nodes[r.Name] = n
		if n.freshUntil.IsZero() {
			continue
		}
		for _, p := range r.Failing {
			f := PathFault{From: r.Name, To: p.Node, Reason: p.Reason, MTU: int(r.MTU), Largest: int(p.Largest), Round: n.roundStarted, freshUntil: n.freshUntil}
			if p.Since != nil {
				f.Since, f.AfterCheck = p.Since.Time, p.AfterCheck
			}
			h.faults[f.From] = append(h.faults[f.From], f)
			if f.To != f.From {
				h.faults[f.To] = append(h.faults[f.To], f)
			}
		}
	}
	return h
}

// PathState is a pair's verdict.
type PathState int

// The verdicts, best first.
const (
	PathVerified PathState = iota
	PathUnverified
	PathFailing
)

// Pair judges the path between a and b at now: failing when a fresh report of either lists the
// other (the faults are returned, a's first); verified when both reports are fresh and each
// node's last round started after the other began probing; else unverified, with why.
func (h *PathHealth) Pair(a, b string, now time.Time) (PathState, []PathFault, string) {
	if h == nil {
		return PathUnverified, nil, "no probe results"
	}
	var faults []PathFault
	for _, f := range h.faults[a] {
		if (f.To == b || f.From == b) && now.Before(f.freshUntil) {
			faults = append(faults, f)
		}
	}
	if len(faults) > 0 {
		slices.SortStableFunc(faults, func(x, y PathFault) int { return boolCmp(x.From != a, y.From != a) })
		return PathFailing, faults, ""
	}
	if why := h.unusable(a, now); why != "" {
		return PathUnverified, nil, why
	}
	if why := h.unusable(b, now); why != "" {
		return PathUnverified, nil, why
	}
	na, nb := h.nodes[a], h.nodes[b]
	switch {
	case na.roundStarted.Before(nb.since):
		return PathUnverified, nil, fmt.Sprintf("%s has not probed %s yet (a round started after %s joined has not completed)", a, b, b)
	case nb.roundStarted.Before(na.since):
		return PathUnverified, nil, fmt.Sprintf("%s has not probed %s yet (a round started after %s joined has not completed)", b, a, a)
	}
	return PathVerified, nil, ""
}

// unusable says why n's results verify nothing at now, or "".
func (h *PathHealth) unusable(n string, now time.Time) string {
	p, ok := h.nodes[n]
	switch {
	case !ok:
		return fmt.Sprintf("%s's probe agent has not reported on %s", n, h.Network)
	case p.problem == v1beta1.ProbeNotMeasured:
		return fmt.Sprintf("%s's paths are %s", n, p.message)
	case p.silent(now):
		return silentMessage(n, p)
	case p.problem != "":
		return fmt.Sprintf("%s's probe agent cannot probe (%s: %s)", n, p.problem, p.message)
	case p.freshUntil.IsZero():
		return fmt.Sprintf("%s's probe agent has not completed a round yet", n)
	case !now.Before(p.freshUntil):
		return fmt.Sprintf("%s's probe results are stale (no round completed since %s: is its agent running?)", n, p.freshUntil.Format(time.RFC3339))
	}
	return ""
}

// Faults returns the fresh failing directions that involve n.
func (h *PathHealth) Faults(n string, now time.Time) []PathFault {
	if h == nil {
		return nil
	}
	var out []PathFault
	for _, f := range h.faults[n] {
		if now.Before(f.freshUntil) {
			out = append(out, f)
		}
	}
	return out
}

// BrokenPath is a node whose migration path to or from a source fails, and the fault that says so.
type BrokenPath struct {
	Node  string
	Fault PathFault
}

// BrokenFrom is the one answer to "which targets are behind a failing path from source": every
// node whose path to or from source fails in a fresh report (Pair says PathFailing), once, in name
// order, each with its first fault, the source's own direction first. Admission's pathHealthy
// rule, preflight and the steering of target pods all ask it.
func (h *PathHealth) BrokenFrom(source string, now time.Time) []BrokenPath {
	var out []BrokenPath
	for _, f := range h.Faults(source, now) {
		peer := f.To
		if peer == source {
			peer = f.From
		}
		if peer == source {
			continue
		}
		i := slices.IndexFunc(out, func(b BrokenPath) bool { return b.Node == peer })
		switch {
		case i < 0:
			out = append(out, BrokenPath{Node: peer, Fault: f})
		case out[i].Fault.From != source && f.From == source:
			out[i].Fault = f
		}
	}
	slices.SortFunc(out, func(a, b BrokenPath) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// Problem returns the problem and message n's agent reports (why it cannot probe), "" when none.
func (h *PathHealth) Problem(n string) (problem, message string) {
	if h == nil {
		return "", ""
	}
	p := h.nodes[n]
	return p.problem, p.message
}

// Fresh reports whether n's own results verify anything at now.
func (h *PathHealth) Fresh(n string, now time.Time) bool { return h != nil && h.unusable(n, now) == "" }

// Summary counts the pairs of the attached nodes: verified, failing, unverified, without walking
// the pairs (the faults are walked, and the nodes sorted once), and lists up to ten failing
// directions, the nodes with the most failures first.
func (h *PathHealth) Summary(attached []string, now time.Time) v1beta1.PathsStatus {
	n := len(attached)
	pairs := n * (n - 1) / 2
	in := make(map[string]bool, n)
	for _, a := range attached {
		in[a] = true
	}
	// Nodes whose results verify nothing: every pair with one of them is unverified.
	var fresh []pathNode
	unusable := 0
	for _, a := range attached {
		if h.Fresh(a, now) {
			fresh = append(fresh, h.nodes[a])
		} else {
			unusable++
		}
	}
	unverified := unusable*(n-unusable) + unusable*(unusable-1)/2
	unverified += pendingPairs(fresh)
	// Failing pairs: each unordered pair once; one already counted unverified moves over.
	failing := map[[2]string][]PathFault{}
	perNode := map[string]int{}
	for _, a := range attached {
		for _, f := range h.Faults(a, now) {
			if f.From != a || !in[f.To] || f.To == a {
				continue
			}
			k := [2]string{min(f.From, f.To), max(f.From, f.To)}
			if _, seen := failing[k]; !seen {
				if h.pairIgnoringFaults(k[0], k[1], now) == PathUnverified {
					unverified--
				}
			}
			failing[k] = append(failing[k], f)
			perNode[f.From]++
			perNode[f.To]++
		}
	}
	st := v1beta1.PathsStatus{Pairs: int32(pairs), Failing: int32(len(failing)), Unverified: int32(unverified)}
	st.Verified = st.Pairs - st.Failing - st.Unverified
	var all []PathFault
	for _, fs := range failing {
		all = append(all, fs...)
	}
	worst := func(f PathFault) int { return max(perNode[f.From], perNode[f.To]) }
	slices.SortFunc(all, func(x, y PathFault) int {
		if c := worst(y) - worst(x); c != 0 {
			return c
		}
		if c := strings.Compare(x.From, y.From); c != 0 {
			return c
		}
		return strings.Compare(x.To, y.To)
	})
	for _, f := range all[:min(len(all), 10)] {
		st.Failures = append(st.Failures, v1beta1.PathFailure{From: f.From, To: f.To, Reason: f.Reason, Message: f.Message()})
	}
	st.Summary = fmt.Sprintf("%d/%d verified", st.Verified, st.Pairs)
	if st.Failing > 0 {
		st.Summary += fmt.Sprintf(", %d failing", st.Failing)
	}
	return st
}

// pairIgnoringFaults is Pair without the faults: whether the pair would be verified.
func (h *PathHealth) pairIgnoringFaults(a, b string, now time.Time) PathState {
	g := *h
	g.faults = nil
	st, _, _ := g.Pair(a, b, now)
	return st
}

// pendingPairs counts the pairs of fresh nodes one of which has not probed the other yet: a
// pair is covered when each node's last round started after the other began probing, that is
// when the spans [since, roundStarted] of the two intersect; it counts the disjoint ones.
func pendingPairs(nodes []pathNode) int {
	ends := make([]int64, len(nodes))
	for i, p := range nodes {
		ends[i] = p.roundStarted.UnixNano()
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	count := 0
	for _, p := range nodes {
		s := p.since.UnixNano()
		count += sort.Search(len(ends), func(i int) bool { return ends[i] >= s })
	}
	return count
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// PathStore holds the latest PathHealth; the zero PathStore holds none.
type PathStore struct{ p atomic.Pointer[PathHealth] }

// Load returns the latest health, or nil before the first observation.
func (s *PathStore) Load() *PathHealth {
	if s == nil {
		return nil
	}
	return s.p.Load()
}

// Publish swaps in a new health.
func (s *PathStore) Publish(h *PathHealth) { s.p.Store(h) }
