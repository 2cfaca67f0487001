package migrationcheck

import (
	"math/bits"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck/targetpod"
)

// nodeIndex answers "can a node take this target pod?" without judging every node: one bit per
// node (in the snapshot's order) for what does not depend on the request (Ready, not a witness),
// and bit sets per node label, per label key, per NoSchedule/NoExecute taint and for cordoned
// nodes, combined per request into the nodes that pass the label, taint, cordon and required
// node affinity checks. Built once per node snapshot; immutable afterwards, but for the room
// classes (see roomClass) that reviews learn and pod events clear, which rule out full nodes
// without reading their usage.
type nodeIndex struct {
	nodes    []*corev1.Node
	byName   map[string]int
	base     []uint64            // Ready ∧ not a witness
	labels   map[label][]uint64  // nodes carrying key=value
	keys     map[string][]uint64 // nodes carrying key, any value
	taints   []taintSet          // the nodes carrying each NoSchedule or NoExecute taint, in the order first seen
	cordoned []uint64
	allocs   []nodeAlloc // per node
	vendors  []string    // per node, its CPU vendor label key (targetpod.VendorKey), "" for none
	// pods and cells, when set (bindPods), give each node's usage: cells[i] is nodes[i]'s in pods,
	// and rooms[i] its roomClass, 0 until learnt and again after an event on its pods.
	pods  *PodCache
	cells []*usageCell
	rooms []atomic.Uint32
	// paths is the path index of the latest PathHealth a review judged on these nodes.
	paths atomic.Pointer[pathIndex]
}

// bindPods makes ix read the nodes' usage from their cells in pods.
func (ix *nodeIndex) bindPods(pods *PodCache) {
	ix.pods, ix.rooms = pods, make([]atomic.Uint32, len(ix.nodes))
	ix.cells = pods.cellsOf(ix.nodes, ix.rooms)
}

// taintSet is the nodes carrying one taint.
type taintSet struct {
	taint corev1.Taint
	nodes []uint64
}

func newNodeIndex(nodes []*corev1.Node) *nodeIndex {
	words := (len(nodes) + 63) / 64
	ix := &nodeIndex{nodes: nodes, byName: make(map[string]int, len(nodes)), base: make([]uint64, words),
		labels: map[label][]uint64{}, keys: map[string][]uint64{}, cordoned: make([]uint64, words),
		allocs: make([]nodeAlloc, len(nodes)), vendors: make([]string, len(nodes))}
	set := func(m func() []uint64, i int) { m()[i/64] |= 1 << (i % 64) }
	taints := map[corev1.Taint]int{} // index in ix.taints, by key, value and effect
	for i, n := range nodes {
		if n == nil {
			continue
		}
		ix.byName[n.Name] = i
		ix.allocs[i] = allocOf(n)
		ix.vendors[i] = targetpod.VendorKey(n.Labels)
		if _, witness := n.Labels[settings.WitnessLabel]; nodeReady(n) && !witness {
			set(func() []uint64 { return ix.base }, i)
		}
		if n.Spec.Unschedulable {
			set(func() []uint64 { return ix.cordoned }, i)
		}
		for k, v := range n.Labels {
			set(func() []uint64 { return lookupOrMake(ix.labels, label{k, v}, words) }, i)
			set(func() []uint64 { return lookupOrMake(ix.keys, k, words) }, i)
		}
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
				k := corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
				j, ok := taints[k]
				if !ok {
					j, taints[k] = len(ix.taints), len(ix.taints)
					ix.taints = append(ix.taints, taintSet{k, make([]uint64, words)})
				}
				set(func() []uint64 { return ix.taints[j].nodes }, i)
			}
		}
	}
	return ix
}

// position returns the position of the node named name; none for "" or a nil index.
func (ix *nodeIndex) position(name string) (int, bool) {
	if ix == nil || name == "" {
		return -1, false
	}
	i, ok := ix.byName[name]
	return i, ok
}

func lookupOrMake[K comparable](m map[K][]uint64, k K, words int) []uint64 {
	s, ok := m[k]
	if !ok {
		s = make([]uint64, words)
		m[k] = s
	}
	return s
}

// maxStackWords: up to 64 × this many nodes, the bit sets of a request live on the stack.
const maxStackWords = 32

// anyFeasible reports whether a node can take t's target pod (search without its findings).
func (ix *nodeIndex) anyFeasible(t *target) bool {
	var f pathFindings
	return ix.search(t, &f)
}

// search reports whether a node can take t's target pod. The bit sets narrow the nodes by every
// check they can express exactly; each node left is confirmed with t.confirm (room, the VMI's
// other pods, and the affinity when the sets cannot express it). With t.paths on, the nodes whose
// path from the source fails are dropped as the not attached ones are; when no other node is
// left, those that are feasible but for their path are recorded in f (and count as feasible: the
// denial is pathHealthy's), and when one is left, the feasible nodes whose path is unverified.
// TestNodeIndexAgreesWithTheWalk holds it to t.judge over every node.
func (ix *nodeIndex) search(t *target, f *pathFindings) bool {
	var buf, tmp [maxStackWords]uint64
	acc, scratch := buf[:0], tmp[:0]
	if len(ix.base) > maxStackWords {
		acc, scratch = make([]uint64, 0, len(ix.base)), make([]uint64, 0, len(ix.base))
	}
	acc = append(acc, ix.base...)
	scratch = scratch[:len(ix.base)]
	and := func(l label) bool {
		set, ok := ix.labels[l]
		if ok {
			andWords(acc, set)
		}
		return ok
	}
	for _, r := range t.c.Selector {
		if !and(label{r.Key, r.Value}) {
			return false
		}
	}
	for _, l := range t.kvLabels {
		if !and(l) {
			return false
		}
	}
	if t.clusterNetwork != "" && !and(label{t.clusterNetworkLabel, "true"}) {
		return false
	}
	if !tolerates(t.c.Tolerations, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule) {
		andNotWords(acc, ix.cordoned)
	}
	for j := range ix.taints {
		if ts := &ix.taints[j]; !tolerated(t.c.Tolerations, &ts.taint) {
			andNotWords(acc, ts.nodes)
		}
	}
	affinityDone := true
	if na := t.c.Affinity; na != nil && na.NodeAffinity != nil && na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		affinityDone = ix.affinity(na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, scratch)
		if affinityDone {
			andWords(acc, scratch)
		}
	}
	if i := t.sourceIx; i >= 0 {
		acc[i/64] &^= 1 << (i % 64)
	}
	for _, name := range t.occupied { // KubeVirt's anti-affinity to the VMI's pods
		if i, ok := ix.byName[name]; ok {
			acc[i/64] &^= 1 << (i % 64)
		}
	}
	for name := range t.notAttached { // not on the migration network (yet)
		if i, ok := ix.byName[name]; ok {
			acc[i/64] &^= 1 << (i % 64)
		}
	}
	var dropBuf [4]int
	dropped := dropBuf[:0] // candidates behind a failing path
	for _, name := range t.paths.broken {
		if i, ok := ix.byName[name]; ok && acc[i/64]&(1<<(i%64)) != 0 {
			acc[i/64] &^= 1 << (i % 64)
			dropped = append(dropped, i)
		}
	}
	found := -1
search:
	for w, word := range acc {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if i := w*64 + b; t.confirm(ix, i, affinityDone) {
				found = i
				break search
			}
			word &^= 1 << b
		}
	}
	if !t.paths.on {
		return found >= 0
	}
	if found < 0 {
		for _, i := range dropped {
			if t.confirm(ix, i, affinityDone) {
				f.failing.add(i)
			}
		}
		return f.failing.n > 0
	}
	f.anyTarget = found
	if !t.paths.sourceFresh {
		f.sourceUnusable = true
		return true
	}
	ix.pathsOf(t.paths.h).unverifiedTargets(ix, t, acc, affinityDone, f)
	return true
}

// affinity writes into out the nodes matching any of terms (the scheduler's required node
// affinity: terms ORed, expressions ANDed), and returns false, leaving out unusable, when a term
// uses what the sets cannot express (Gt, Lt, matchFields): t.judge then decides alone.
func (ix *nodeIndex) affinity(terms []corev1.NodeSelectorTerm, out []uint64) bool {
	clear(out)
	var buf [maxStackWords]uint64
	term := buf[:0]
	if len(out) > maxStackWords {
		term = make([]uint64, 0, len(out))
	}
	term = term[:len(out)]
	for _, tm := range terms {
		if len(tm.MatchFields) > 0 {
			return false
		}
		if len(tm.MatchExpressions) == 0 {
			continue // an empty term matches nothing
		}
		fillOnes(term, len(ix.nodes))
		for _, r := range tm.MatchExpressions {
			if !validRequirement(&r) {
				return false // the scheduler's selector fails to parse it: t.judge says how
			}
			switch r.Operator {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				var any [maxStackWords]uint64
				union := any[:0]
				if len(out) > maxStackWords {
					union = make([]uint64, 0, len(out))
				}
				union = union[:len(out)]
				for _, v := range r.Values {
					if set, ok := ix.labels[label{r.Key, v}]; ok {
						orWords(union, set)
					}
				}
				if r.Operator == corev1.NodeSelectorOpIn {
					andWords(term, union)
				} else {
					andNotWords(term, union)
				}
			case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
				set := ix.keys[r.Key]
				if set == nil {
					if r.Operator == corev1.NodeSelectorOpExists {
						clear(term)
					}
					continue
				}
				if r.Operator == corev1.NodeSelectorOpExists {
					andWords(term, set)
				} else {
					andNotWords(term, set)
				}
			default:
				return false
			}
		}
		orWords(out, term)
	}
	return true
}

func andWords(acc, set []uint64) {
	for w := range acc {
		acc[w] &= set[w]
	}
}

func andNotWords(acc, set []uint64) {
	for w := range acc {
		acc[w] &^= set[w]
	}
}

func orWords(acc, set []uint64) {
	for w := range acc {
		acc[w] |= set[w]
	}
}

// fillOnes sets the first n bits of s.
func fillOnes(s []uint64, n int) {
	for w := range s {
		switch {
		case n >= (w+1)*64:
			s[w] = ^uint64(0)
		case n > w*64:
			s[w] = 1<<(n-w*64) - 1
		default:
			s[w] = 0
		}
	}
}

// validRequirement reports whether r's key is a qualified name and its values label values, as
// the scheduler's label selector requires (validation.IsQualifiedName and IsValidLabelValue,
// without their regular expressions: this runs on every review).
func validRequirement(r *corev1.NodeSelectorRequirement) bool {
	prefix, name, found := strings.Cut(r.Key, "/")
	if !found {
		prefix, name = "", r.Key
	} else if prefix == "" || len(prefix) > 253 || !dnsSubdomain(prefix) {
		return false
	}
	if name == "" || !labelValue(name) {
		return false
	}
	for _, v := range r.Values {
		if !labelValue(v) {
			return false
		}
	}
	return true
}

// labelValue: empty, or at most 63 characters of [A-Za-z0-9_.-] beginning and ending with an
// alphanumeric.
func labelValue(v string) bool {
	if len(v) > 63 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && ((i == 0 || i == len(v)-1) || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// dnsSubdomain: lowercase alphanumerics, '-' and '.', beginning and ending with an alphanumeric
// (each label likewise).
func dnsSubdomain(s string) bool {
	for rest := s; ; {
		part, tail, more := strings.Cut(rest, ".")
		if part == "" || len(part) > 63 {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
			if !alnum && (i == 0 || i == len(part)-1 || c != '-') {
				return false
			}
		}
		if !more {
			return true
		}
		rest = tail
	}
}

// reads reports whether pods is the pod cache ix reads usage and room classes from.
func (ix *nodeIndex) reads(pods PodView) bool { return ix.pods != nil && pods == PodView(ix.pods) }

// lacksRoom reports whether node i's room class, learnt by an earlier hasRoom, says it surely
// cannot hold need; false when its class is not known or pods is not the pod cache ix reads.
func (ix *nodeIndex) lacksRoom(i int, pods PodView, need roomClass) bool {
	return ix.rooms != nil && ix.reads(pods) && roomClass(ix.rooms[i].Load()).lacks(need)
}

// hasRoom reports whether node i can hold demand (fits), reading its usage as pods sees it: from
// its cell when pods is the pod cache ix reads (and then learning its room class), else by name.
func (ix *nodeIndex) hasRoom(i int, pods PodView, demand []demand) bool {
	if ix.cells != nil && ix.cells[i] != nil && ix.reads(pods) {
		c := ix.cells[i]
		u := ix.pods.usageOf(c)
		c.learn(u, classOf(&ix.allocs[i], &u.NodeUsage))
		_, _, ok := fits(demand, &ix.allocs[i], &u.NodeUsage)
		return ok
	}
	u := pods.Usage(ix.nodes[i].Name)
	_, _, ok := fits(demand, &ix.allocs[i], &u)
	return ok
}
