package webhook

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// nodeIndex answers "does a node other than the source pass every feasibleTarget filter?" without
// walking the nodes: one bit per node (in the snapshot's order) for the filters that do not depend
// on the request (Ready, not a witness) and one bit set per node label, intersected
// per request. Built once per node snapshot; immutable afterwards.
type nodeIndex struct {
	nodes  []*corev1.Node
	byName map[string]int
	base   []uint64           // Ready ∧ not a witness
	labels map[label][]uint64 // nodes carrying key=value
}

func newNodeIndex(nodes []*corev1.Node) *nodeIndex {
	words := (len(nodes) + 63) / 64
	ix := &nodeIndex{nodes: nodes, byName: make(map[string]int, len(nodes)), base: make([]uint64, words), labels: map[label][]uint64{}}
	for i, n := range nodes {
		if n == nil {
			continue
		}
		ix.byName[n.Name] = i
		if _, witness := n.Labels[settings.WitnessLabel]; nodeReady(n) && !witness {
			ix.base[i/64] |= 1 << (i % 64)
		}
		for k, v := range n.Labels {
			set := ix.labels[label{k, v}]
			if set == nil {
				set = make([]uint64, words)
				ix.labels[label{k, v}] = set
			}
			set[i/64] |= 1 << (i % 64)
		}
	}
	return ix
}

// maxStackWords: up to 64 × this many nodes, the intersection lives on the stack.
const maxStackWords = 32

// anyFeasible reports whether a node can take t's target pod, narrowing the nodes by the labels t
// requires and confirming each node the bits point at with t.judge, so the index can only make
// admission faster, never different.
func (ix *nodeIndex) anyFeasible(t *target) bool {
	var buf [maxStackWords]uint64
	acc := buf[:0]
	if len(ix.base) > maxStackWords {
		acc = make([]uint64, 0, len(ix.base))
	}
	acc = append(acc, ix.base...)
	and := func(ls []label) bool {
		for _, l := range ls {
			set, ok := ix.labels[l]
			if !ok {
				return false
			}
			for w := range acc {
				acc[w] &= set[w]
			}
		}
		return true
	}
	if !and(t.sel) || !and(t.kvLabels) {
		return false
	}
	if t.clusterNetwork != "" {
		set, ok := ix.labels[label{t.clusterNetworkLabel, "true"}]
		if !ok {
			return false
		}
		for w := range acc {
			acc[w] &= set[w]
		}
	}
	if i, ok := ix.byName[t.source]; ok && t.source != "" {
		acc[i/64] &^= 1 << (i % 64)
	}
	for w, word := range acc {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if t.judge(ix.nodes[w*64+b]).stage == numStages {
				return true
			}
			word &^= 1 << b
		}
	}
	return false
}
