package sim

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestEndedStreamsKeepsTheLatest: the stand-in keeps the last endedKept stream reports, oldest
// dropped first. Near miss: a report put again under the same migration (dropStreams runs once
// per closed stream, but a test's re-read must not count twice) takes no second place in the
// order, so it does not push a newer one out early.
// Catches (seen once each): order appended on every put (row "put twice" loses uid 1 early);
// the newest dropped instead of the oldest (row "one over" loses m-256).
func TestEndedStreamsKeepsTheLatest(t *testing.T) {
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("m-%d", i)) }
	for _, tc := range []struct {
		name       string
		puts       []int
		kept, gone []int
	}{
		{name: "at the bound", puts: seq(0, endedKept), kept: []int{0, endedKept - 1}},
		{name: "one over", puts: seq(0, endedKept+1), kept: []int{1, endedKept}, gone: []int{0}},
		{name: "put twice (near miss)", puts: append([]int{0, 0}, seq(1, endedKept)...), kept: []int{0, 1, endedKept - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e endedStreams
			for _, i := range tc.puts {
				e.put(uid(i), StreamReport{Sent: int64(i)})
			}
			for _, i := range tc.kept {
				if r, ok := e.get(uid(i)); !ok || r.Sent != int64(i) {
					t.Errorf("%s: got %+v, %v; want kept", uid(i), r, ok)
				}
			}
			for _, i := range tc.gone {
				if _, ok := e.get(uid(i)); ok {
					t.Errorf("%s kept; want dropped (the oldest)", uid(i))
				}
			}
		})
	}
}

// seq is from, from+1, … to-1.
func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
