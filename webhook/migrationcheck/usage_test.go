package migrationcheck

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podCacheOf is a PodCache over an informer store holding pods, indexed as Start indexes it; the
// test plays the informer: it changes the store, then calls forget, in that order.
func podCacheOf(pods ...*corev1.Pod) *PodCache {
	idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podNodeIndex: byNode, podCreatedByIndex: byCreator})
	for _, p := range pods {
		_ = idx.Add(p)
	}
	pc := &PodCache{}
	pc.indexer.Store(&idx)
	return pc
}

func (p *PodCache) store() toolscache.Indexer { return *p.indexer.Load() }

// TestUsageFollowsPodEvents reads every node's usage through the node index's cells and by name
// after each kind of pod event and expects the sum of the pods the store then holds. Faults
// caught: an event that does not drop the cell the index reads (a new cell per lookup, a cell
// dropped from the map but kept by the index), a deleted pod's old node left with its requests.
func TestUsageFollowsPodEvents(t *testing.T) {
	alloc := allocatable("8", "16Gi", "110")
	nodes := []*corev1.Node{node("node-0", alloc), node("node-1", alloc), node("node-2", alloc)}
	a, b := other("a", "node-0", "1", "1Gi"), other("b", "node-1", "2", "2Gi")
	pc := podCacheOf(a, b)
	ix := newNodeIndex(nodes)
	ix.bindPods(pc)
	check := func(step string) {
		t.Helper()
		for i, n := range nodes {
			items, _ := pc.store().ByIndex(podNodeIndex, n.Name)
			var pods []*corev1.Pod
			for _, it := range items {
				pods = append(pods, it.(*corev1.Pod))
			}
			want := sumUsage(pods)
			if r := roomClass(ix.rooms[i].Load()); r != 0 && r != classOf(&ix.allocs[i], &want) {
				t.Errorf("%s: %s keeps room class %#x, want %#x or none: a class from before the event", step, n.Name, r, classOf(&ix.allocs[i], &want))
			}
			if got := pc.usageOf(ix.cells[i]).NodeUsage; got.Pods != want.Pods || got.Requests.fixed != want.Requests.fixed {
				t.Errorf("%s: %s through the index: %+v, want %+v", step, n.Name, got, want)
			}
			ix.hasRoom(i, pc, nil)
			if r := roomClass(ix.rooms[i].Load()); r != classOf(&ix.allocs[i], &want) {
				t.Errorf("%s: %s learnt room class %#x, want %#x", step, n.Name, r, classOf(&ix.allocs[i], &want))
			}
			if got := pc.Usage(n.Name); got.Pods != want.Pods || got.Requests.fixed != want.Requests.fixed {
				t.Errorf("%s: %s by name: %+v, want %+v", step, n.Name, got, want)
			}
		}
	}
	check("start")
	c := other("c", "node-2", "3", "3Gi")
	_ = pc.store().Add(c)
	pc.forget(c)
	check("add")
	bigger := other("b", "node-1", "4", "4Gi")
	_ = pc.store().Update(bigger)
	pc.forget(b)
	pc.forget(bigger)
	check("update")
	_ = pc.store().Delete(a)
	pc.forget(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a})
	check("delete (final state unknown)")
	// A node deleted and added again: the new index's cell must be the one events reach.
	ix = newNodeIndex(nodes[1:])
	ix.bindPods(pc)
	if n := cellCount(pc); n != 2 {
		t.Errorf("%d usage cells for 2 nodes: a deleted node left its cell behind", n)
	}
	ix = newNodeIndex(nodes)
	ix.bindPods(pc)
	d := other("d", "node-0", "1", "1Gi")
	_ = pc.store().Add(d)
	pc.forget(d)
	check("node added again")
}

func cellCount(pc *PodCache) int {
	n := 0
	pc.cells.Range(func(any, any) bool { n++; return true })
	return n
}

// TestUsageNeverKeepsAStaleSum races readers against events on one node: a reader that summed
// the pods before an event must not leave that sum in place after it. Fault caught: the
// generation check dropped (a stale sum kept until the node's next pod event).
func TestUsageNeverKeepsAStaleSum(t *testing.T) {
	for round := range 200 {
		pod := other("p", "node-0", "1", "1Gi")
		pc := podCacheOf(pod)
		cell := pc.cell("node-0")
		whileReading(func() { pc.usageOf(cell) }, func() {
			for i := 2; i <= 50; i++ {
				next := other("p", "node-0", fmt.Sprint(i), "1Gi")
				_ = pc.store().Update(next)
				pc.forget(next)
			}
		})
		want := resource.MustParse("50")
		if got := pc.usageOf(cell).Requests.get(corev1.ResourceCPU, slot(corev1.ResourceCPU)); got != amount(corev1.ResourceCPU, want) {
			t.Fatalf("round %d: cpu used %d after the last event, want %d: a sum from before an event was kept", round, got, amount(corev1.ResourceCPU, want))
		}
	}
}

// TestPodRequestsAsTheScheduler holds podRequests' shortcut to the scheduler's PodRequests. Fault
// caught: the shortcut taken for a pod whose total is not its one container's (init containers,
// overhead, pod-level resources).
func TestPodRequestsAsTheScheduler(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	one := other("one", "node-0", "1", "1Gi")
	two := one.DeepCopy()
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "side", Resources: corev1.ResourceRequirements{Requests: rl("500m", "1Gi")}})
	initc := one.DeepCopy()
	initc.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("4", "512Mi")}}}
	overhead := one.DeepCopy()
	overhead.Spec.Overhead = rl("100m", "200Mi")
	podLevel := one.DeepCopy()
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("3", "3Gi")}
	trimmed, _ := TrimPod(two.DeepCopy())
	for name, pod := range map[string]any{"one container": one, "two containers": two, "an init container": initc,
		"overhead": overhead, "pod-level resources": podLevel, "trimmed": trimmed} {
		p, ok := pod.(*corev1.Pod)
		if !ok {
			t.Fatalf("%s: TrimPod returned %T", name, pod)
		}
		want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		if got := podRequests(p); !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: podRequests %v, PodRequests %v", name, got, want)
		}
	}
}

// whileReading runs read in a loop on two goroutines while events runs, and stops them after it.
func whileReading(read, events func()) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					read()
				}
			}
		}()
	}
	events()
	close(stop)
	wg.Wait()
}
