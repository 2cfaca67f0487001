package migrationcheck

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
)

// pathCheck is what rule pathHealthy needs of a migration while it is judged: the probe agents'
// results for the network in force, the time, and the targets whose path from the source fails.
// Zero (on false) when the rule is off for the user, no migration network is in force, or no
// probe agent reported on it: the paths are then not judged at all.
type pathCheck struct {
	on  bool
	h   *health.PathHealth
	now time.Time
	// broken are the nodes a fresh report says the path from or to the source fails with,
	// usually none.
	broken    []string
	brokenBuf [4]string
	// sourceFresh: the source's own results verify pairs (else every path from it is unverified).
	sourceFresh bool
}

// newPathCheck fills t.paths for in, after newTarget set t's source and network.
func (t *target) newPathCheck(in *CreateInput) {
	h := in.Paths
	if t.network == "" || t.source == "" || h.Reported() == 0 || !sameNAD(h.Network, t.network) ||
		in.Policy.ModeFor(settings.RulePathHealthy, in.User) == settings.ModeOff {
		return
	}
	p := &t.paths
	p.on, p.h, p.now = true, h, in.Now
	if p.now.IsZero() {
		p.now = time.Now()
	}
	p.broken = p.brokenBuf[:0]
	for _, b := range h.BrokenFrom(t.source, p.now) {
		p.broken = append(p.broken, b.Node)
	}
	p.sourceFresh = h.Fresh(t.source, p.now)
}

// sameNAD reports whether network, as PathReports name it (namespace/name), is the NAD nad (the
// readiness snapshot's Network, a name in the KubeVirt namespace). A bare name is compared as is.
func sameNAD(network, nad string) bool {
	if _, name, ok := strings.Cut(network, "/"); ok {
		return name == nad
	}
	return network == nad
}

// isBroken reports whether the path between the source and node fails.
func (p *pathCheck) isBroken(node string) bool { return p.on && slices.Contains(p.broken, node) }

// firstThree keeps the three smallest node positions it is given, and counts them all.
type firstThree struct {
	pos [3]int
	n   int
}

func (f *firstThree) add(p int) {
	k := min(f.n, len(f.pos))
	f.n++
	for k > 0 && f.pos[k-1] > p {
		if k < len(f.pos) {
			f.pos[k] = f.pos[k-1]
		}
		k--
	}
	if k < len(f.pos) {
		f.pos[k] = p
	}
}

// list returns the kept positions.
func (f *firstThree) list() []int { return f.pos[:min(f.n, len(f.pos))] }

// pathFindings is what the target search found about the paths (pathCheck on): positions are
// into CreateInput.Nodes.
type pathFindings struct {
	// failing are the otherwise feasible targets dropped for a failing path, when no other target
	// was left; empty when one was.
	failing firstThree
	// unverified are the feasible targets whose path from the source is unverified; all of them
	// also in allUnverified when keepAll (the steering prefers verified targets over each).
	unverified    firstThree
	keepAll       bool
	allUnverified []int
	// sourceUnusable: the source's own results verify nothing, so no path from it is verified;
	// anyTarget is a feasible target (for the reason Pair gives).
	sourceUnusable bool
	anyTarget      int
}

// addUnverified records the feasible target at position i as unverified.
func (f *pathFindings) addUnverified(i int) {
	f.unverified.add(i)
	if f.keepAll {
		f.allUnverified = append(f.allUnverified, i)
	}
}

// pathIndex is a PathHealth laid over a node index, built once per (index, health): which nodes'
// results may verify a pair, and their times, so that a review finds the few targets whose path
// is unverified with a handful of word operations when none is (every result fresh, every node
// probed by every other).
type pathIndex struct {
	h *health.PathHealth
	// usable holds the nodes whose agent reports no problem and completed a round.
	usable []uint64
	// since, round, fresh: per usable node, Since, RoundStarted and FreshUntil in Unix nanoseconds.
	since, round, fresh []int64
	// minFresh, maxSince, minRound over the usable nodes: before minFresh none is stale; a source
	// whose last round started at or after maxSince has probed every node, and one that began
	// probing at or before minRound has been probed by every node.
	minFresh, maxSince, minRound int64
	// others are the reports of nodes outside the index (the source may be one), by name.
	others map[string]health.NodeProbe
}

// nanos is t in Unix nanoseconds, clamped to int64 (the zero time is the smallest).
func nanos(t time.Time) int64 {
	switch {
	case t.Before(minNanoTime):
		return math.MinInt64
	case t.After(maxNanoTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minNanoTime, maxNanoTime = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

func newPathIndex(ix *nodeIndex, h *health.PathHealth) *pathIndex {
	n := len(ix.nodes)
	p := &pathIndex{h: h, usable: make([]uint64, len(ix.base)), since: make([]int64, n), round: make([]int64, n), fresh: make([]int64, n),
		minFresh: math.MaxInt64, maxSince: math.MinInt64, minRound: math.MaxInt64}
	for _, r := range h.Probes() {
		i, ok := ix.byName[r.Node]
		if !ok {
			if p.others == nil {
				p.others = map[string]health.NodeProbe{}
			}
			p.others[r.Node] = r
			continue
		}
		if !r.Usable {
			continue
		}
		p.usable[i/64] |= 1 << (i % 64)
		p.since[i], p.round[i], p.fresh[i] = nanos(r.Since), nanos(r.RoundStarted), nanos(r.FreshUntil)
		p.minFresh, p.maxSince, p.minRound = min(p.minFresh, p.fresh[i]), max(p.maxSince, p.since[i]), min(p.minRound, p.round[i])
	}
	return p
}

// pathsOf returns the path index of h over ix, building it on the first review after h was
// published (two reviews may both build it: it is the same).
func (ix *nodeIndex) pathsOf(h *health.PathHealth) *pathIndex {
	if p := ix.paths.Load(); p != nil && p.h == h {
		return p
	}
	p := newPathIndex(ix, h)
	ix.paths.Store(p)
	return p
}

// sourceTimes returns the source's Since and RoundStarted (a usable source: pathCheck.sourceFresh).
func (p *pathIndex) sourceTimes(t *target) (since, round int64) {
	if i := t.sourceIx; i >= 0 {
		return p.since[i], p.round[i]
	}
	r := p.others[t.source]
	return nanos(r.Since), nanos(r.RoundStarted)
}

// unverifiedTargets adds to f the nodes of cands (candidates of the bit sets, the failing ones
// dropped) that t.confirm accepts and whose path from the usable source is unverified: not usable
// themselves, stale at now, or not yet probed by the source or not yet probing it (Pair).
func (p *pathIndex) unverifiedTargets(ix *nodeIndex, t *target, cands []uint64, affinityDone bool, f *pathFindings) {
	now := nanos(t.paths.now)
	ss, rs := p.sourceTimes(t)
	allTimely := now < p.minFresh && p.maxSince <= rs && p.minRound >= ss
	for w, word := range cands {
		if allTimely {
			word &^= p.usable[w] // the usable ones are all verified
		}
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			i := w*64 + b
			doubt := p.usable[w]&(1<<b) == 0 || p.fresh[i] <= now || p.since[i] > rs || p.round[i] < ss
			if doubt && t.confirm(ix, i, affinityDone) {
				f.addUnverified(i)
			}
		}
	}
}

// checkPathHealthy: the target search (shared with feasibleTarget) dropped the targets behind a
// failing path; when nothing else was left the rule refuses, naming each pair; when a target is
// left it warns, never refuses, about the nodes behind a failing path that KubeVirt's scheduler may
// still pick (pathsAvoided), else about the paths still unverified.
func checkPathHealthy(in *CreateInput) finding {
	if in.VMI == nil {
		return finding{}
	}
	f := in.feasible()
	if !f.pathsOn {
		return finding{}
	}
	source, now, h := in.VMI.Status.NodeName, f.now, in.Paths
	pf := &f.paths
	switch {
	case pf.failing.n > 0:
		var b strings.Builder
		fmt.Fprintf(&b, "no target with a healthy migration path from %s: ", source)
		for k, i := range pf.failing.list() {
			if k > 0 {
				b.WriteString("; ")
			}
			name := in.Nodes[i].Name
			_, faults, _ := h.Pair(source, name, now)
			msg := "its path fails"
			if len(faults) > 0 {
				msg = faults[0].Message()
			}
			b.WriteString(name + ": " + msg)
		}
		if more := pf.failing.n - len(pf.failing.list()); more > 0 {
			fmt.Fprintf(&b, "; and %d more %s with a failing path", more, settings.Plural(more, "target", "targets"))
		}
		b.WriteString(" (kubectl get pathreports " + source + " -o yaml)")
		if f.pin != "" {
			// Pinned to that node, as Harvester's migrate action pins it: the pin is the way out.
			fmt.Fprintf(&b, "; spec.addedNodeSelector pins the target to %s=%s, one node: name another node there or drop the key (%s)",
				corev1.LabelHostname, f.pin, preflightHint(in.VMI))
			return finding{field: fieldAddedNodeSelector, message: b.String()}
		}
		return finding{field: fieldVMIName, message: b.String()}
	case pf.sourceUnusable:
		_, _, why := h.Pair(source, in.Nodes[pf.anyTarget].Name, now)
		return finding{field: fieldVMIName, warnOnly: true,
			message: fmt.Sprintf("admitted without a verified migration path from %s: %s; the migration may fail if a path is broken", source, why)}
	}
	avoided := pathsAvoided(in, source, now)
	switch {
	case pf.unverified.n > 0:
		var b strings.Builder
		if avoided != "" {
			b.WriteString(avoided + "; and ")
		}
		fmt.Fprintf(&b, "admitted with %d %s whose migration path from %s is unverified: ", pf.unverified.n,
			settings.Plural(pf.unverified.n, "target", "targets"), source)
		for k, i := range pf.unverified.list() {
			if k > 0 {
				b.WriteString("; ")
			}
			name := in.Nodes[i].Name
			_, _, why := h.Pair(source, name, now)
			b.WriteString(name + ": " + why)
		}
		if more := pf.unverified.n - len(pf.unverified.list()); more > 0 {
			fmt.Fprintf(&b, "; and %d more", more)
		}
		b.WriteString("; the migration may fail if its target's path is broken")
		return finding{field: fieldVMIName, warnOnly: true, message: b.String()}
	case avoided != "":
		return finding{field: fieldVMIName, warnOnly: true, message: avoided}
	}
	return finding{}
}

// pathVerdict words the path from the source to the feasible target node for preflight:
// "verified", "unverified: <why>" or "failing: <message>"; "" when paths are not judged.
func (t *target) pathVerdict(node string) string {
	if !t.paths.on {
		return ""
	}
	st, faults, why := t.paths.h.Pair(t.source, node, t.paths.now)
	switch st {
	case health.PathFailing:
		return "failing: " + faults[0].Message()
	case health.PathUnverified:
		return "unverified: " + why
	}
	return "verified"
}

// pathsAvoided words the warning for a migration admitted with healthy targets left while other
// nodes that could take its target pod sit behind a failing path from source: the steering
// (Steer, on the target pod) excludes them with pathHealthy enforced, and only prefers the others
// in warn mode. "" when there are none. It judges only the few nodes the source's faults name
// (nothing in the common case, where the source has no failing path).
func pathsAvoided(in *CreateInput, source string, now time.Time) string {
	if in.Paths == nil || len(in.Paths.Faults(source, now)) == 0 {
		return ""
	}
	t, conflict := newTarget(in)
	if conflict != "" || !t.paths.on || len(t.paths.broken) == 0 {
		return ""
	}
	var names, msgs []string
	for _, n := range in.Nodes {
		if n == nil || !t.paths.isBroken(n.Name) || t.judge(n).stage != numStages {
			continue
		}
		names = append(names, n.Name)
		if _, faults, _ := in.Paths.Pair(source, n.Name, now); len(faults) > 0 {
			msgs = append(msgs, n.Name+": "+faults[0].Message())
		}
	}
	if len(names) == 0 {
		return ""
	}
	if in.Policy.Mode(settings.RulePathHealthy) == settings.ModeEnforce {
		return fmt.Sprintf("%s excluded from the targets: the migration path from %s fails (%s); migranet keeps the target pod off %s",
			strings.Join(names, ", "), source, strings.Join(msgs, "; "), settings.Plural(len(names), "it", "them"))
	}
	return fmt.Sprintf("%s avoided but not excluded (pathHealthy is in warn mode): the migration path from %s fails (%s); the scheduler prefers "+
		"other nodes yet may still place the target pod there: pin a healthy node with spec.addedNodeSelector, or fix the path",
		strings.Join(names, ", "), source, strings.Join(msgs, "; "))
}
