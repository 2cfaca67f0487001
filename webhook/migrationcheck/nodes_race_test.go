package migrationcheck

import (
	"fmt"
	"sync"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// TestNodeSnapshotFirstLoadsSeeTheNodes: while the first snapshot is being built (list, sort,
// index: milliseconds for 1,000 nodes), concurrent admissions must wait for it rather than see no
// nodes at all and refuse every migration with "0 of 0 nodes can take its target pod".
func TestNodeSnapshotFirstLoadsSeeTheNodes(t *testing.T) {
	const nodes, readers = 2000, 16
	for attempt := range 20 {
		store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
		for i := range nodes {
			if err := store.Add(node(fmt.Sprintf("node-%04d", i), withLabels("k", fmt.Sprint(i%7)))); err != nil {
				t.Fatal(err)
			}
		}
		s := &nodeSnapshot{store: store}
		s.dirty.Store(true)
		var wg sync.WaitGroup
		seen := make([]int, readers)
		start := make(chan struct{})
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				seen[r] = len(s.load().Nodes)
			}()
		}
		close(start)
		wg.Wait()
		for r, n := range seen {
			if n != nodes {
				t.Fatalf("attempt %d: reader %d saw %d nodes, want %d", attempt, r, n, nodes)
			}
		}
	}
}
