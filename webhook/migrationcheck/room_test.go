package migrationcheck

import (
	"fmt"
	"math/bits"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestRoomClassNeverRulesOutAFit compares the class test with fits at each boundary of every
// field: a node the class rules out must not fit (the class is a filter before fits, never a
// verdict of its own), and a node with less than half of what is wanted must be ruled out (or the
// class filters nothing). Faults caught: a field compared with <= (a node with exactly the bit
// length wanted ruled out), bit lengths off by one, a field shifted onto its neighbour, the pods
// field ignored, an unknown class taken for an empty node.
func TestRoomClassNeverRulesOutAFit(t *testing.T) {
	wants := []int64{1, 2, 3, 7, 8, 9, 1000, 1023, 1024, 1025, 2 << 30, 3<<30 + 1, 1 << 62}
	for s, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		for _, want := range wants {
			for _, free := range []int64{-5, 0, 1, want / 2, want - 1, want, want + 1, 2 * want, 1<<62 - 1} {
				alloc := nodeAlloc{pods: 110, hasPods: true}
				alloc.res.fixed[s] = 1 << 62
				used := NodeUsage{Pods: 3}
				used.Requests.fixed[s] = 1<<62 - free
				d := []demand{{name: name, slot: s, want: want}}
				_, _, fit := fits(d, &alloc, &used)
				class := classOf(&alloc, &used)
				lacks := class.lacks(needOf(d))
				if lacks && fit {
					t.Errorf("%s: %d free, %d wanted: the class rules out a node that fits", name, free, want)
				}
				if !lacks && free < 1<<(bits.Len64(uint64(want))-1) {
					t.Errorf("%s: %d free, %d wanted: the class does not rule out a node with less than half", name, free, want)
				}
				if (class &^ roomKnown).lacks(needOf(d)) {
					t.Errorf("%s: an unknown class rules a node out", name)
				}
			}
		}
	}
	for _, c := range []struct {
		alloc  nodeAlloc
		pods   int
		lacks  bool
		reason string
	}{
		{nodeAlloc{pods: 110, hasPods: true}, 109, false, "one pod left"},
		{nodeAlloc{pods: 110, hasPods: true}, 110, true, "no pod left"},
		{nodeAlloc{pods: 110, hasPods: true}, 200, true, "over the pod count"},
		{nodeAlloc{}, 5000, false, "no pod count: unlimited"},
	} {
		if got := classOf(&c.alloc, &NodeUsage{Pods: c.pods}).lacks(needOf(nil)); got != c.lacks {
			t.Errorf("pods, %s: lacks %v, want %v", c.reason, got, c.lacks)
		}
	}
}

// TestRoomClassNeverKeepsAStaleOne races readers that learn node-0's room class against events
// on its pod, the last of which shrinks its free cpu to a class none before had: after the events
// the class must be unknown or the last one. Fault caught: a class learnt from a sum that an event
// has since dropped, stored without checking the generation again.
func TestRoomClassNeverKeepsAStaleOne(t *testing.T) {
	nodes := []*corev1.Node{node("node-0", allocatable("64", "256Gi", "110"))}
	for round := range 300 {
		pod := other("p", "node-0", "1", "1Gi")
		pc := podCacheOf(pod)
		ix := newNodeIndex(nodes)
		ix.bindPods(pc)
		whileReading(func() { ix.hasRoom(0, pc, nil) }, func() {
			for i := 2; i <= 40; i++ {
				next := other("p", "node-0", fmt.Sprint(i), "1Gi")
				if i == 40 {
					next = other("p", "node-0", "60", "1Gi") // 4 cores free: bit length 12, the others 14 to 16
				}
				_ = pc.store().Update(next)
				pc.forget(next)
			}
		})
		want := classOf(&ix.allocs[0], &NodeUsage{Pods: 1, Requests: amountsOf(corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("60"), corev1.ResourceMemory: resource.MustParse("1Gi")})})
		if got := roomClass(ix.rooms[0].Load()); got != 0 && got != want {
			t.Fatalf("round %d: room class %#x after the last event, want %#x or none: a class from before an event was kept", round, got, want)
		}
	}
}
