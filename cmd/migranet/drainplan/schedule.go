package drainplan

import (
	"math/rand/v2"
	"slices"
	"time"
)

// EvictionRetry is how long `kubectl drain` waits before it asks again to evict a pod whose
// eviction was refused (virt-api refuses a migrating VMI's pod with 429): after the last
// migration ends the drain finishes at its next retry, on average half of it later.
const EvictionRetry = 5 * time.Second

// maxOrders bounds the orders Simulate tries: every order up to 7 migrations, else this many
// drawn at random (with a fixed seed: the same plan twice gives the same answer).
const maxOrders = 720

// Job is one migration of the drain.
type Job struct {
	Name   string
	Target string
	// Took is its time from the migration's creation to its end.
	Took time.Duration
}

// Limits are what keeps migrations waiting, as KubeVirt v1.8.4's evacuation controller and
// migration controller count them.
type Limits struct {
	// Outbound is parallelOutboundMigrationsPerNode; Cluster parallelMigrationsPerCluster.
	Outbound, Cluster int
	// Elsewhere is the migrations running now from other nodes: they hold cluster slots (as if
	// for the whole drain: the plan cannot know when they end).
	Elsewhere int
	// Inbound is the limit of migrations into one node at once; 0 none. KubeVirt has none (its
	// own code says so); migranet's per-node budget in the migration policy is the seam here.
	Inbound func(node string) int
}

// Slots is how many migrations of this node may run at once.
func (l Limits) Slots() int {
	return max(0, min(l.Outbound, l.Cluster-l.Elsewhere))
}

// Binding names the limit that bounds the drain's parallelism.
func (l Limits) Binding() string {
	switch {
	case l.Cluster-l.Elsewhere < l.Outbound && l.Elsewhere > 0:
		return "parallelMigrationsPerCluster (with migrations running from other nodes)"
	case l.Cluster-l.Elsewhere < l.Outbound:
		return "parallelMigrationsPerCluster"
	case l.Cluster-l.Elsewhere == l.Outbound:
		return "parallelOutboundMigrationsPerNode and parallelMigrationsPerCluster alike"
	}
	return "parallelOutboundMigrationsPerNode"
}

// Run is one job's place in a schedule.
type Run struct {
	Start, End time.Duration
}

// Simulate runs jobs in order under l: each starts when a slot (and its target's inbound slot)
// is free, the evacuation controller taking the candidates in order and skipping one whose
// target is full. It returns each job's run (by index) and the time the last one ends.
func Simulate(jobs []Job, order []int, l Limits) ([]Run, time.Duration) {
	runs := make([]Run, len(jobs))
	slots := l.Slots()
	if slots == 0 || len(jobs) == 0 {
		return runs, 0
	}
	waiting := slices.Clone(order)
	var running []int
	now, end := time.Duration(0), time.Duration(0)
	inbound := func(node string) int {
		n := 0
		for _, r := range running {
			if jobs[r].Target == node {
				n++
			}
		}
		return n
	}
	for len(waiting) > 0 || len(running) > 0 {
		for i := 0; i < len(waiting) && len(running) < slots; {
			j := waiting[i]
			if l.Inbound != nil {
				if lim := l.Inbound(jobs[j].Target); lim > 0 && inbound(jobs[j].Target) >= lim {
					i++
					continue
				}
			}
			runs[j] = Run{Start: now, End: now + jobs[j].Took}
			running = append(running, j)
			waiting = slices.Delete(waiting, i, i+1)
		}
		if len(running) == 0 {
			break // an inbound limit of 0 slots: not reached, Inbound returns >0 or none
		}
		// Advance to the next end.
		next := running[0]
		for _, r := range running[1:] {
			if runs[r].End < runs[next].End {
				next = r
			}
		}
		now = runs[next].End
		end = max(end, now)
		running = slices.DeleteFunc(running, func(r int) bool { return runs[r].End <= now })
	}
	return runs, end
}

// Spread is the drain's time over the orders KubeVirt may take its VMIs in (v1.8.4's
// evacuation controller takes them in its cache's order, which nothing sorts).
type Spread struct {
	Mean, Min, Max time.Duration
	// Orders is how many orders were simulated.
	Orders int
}

// SimulateOrders simulates jobs in every order (up to 7 jobs) or maxOrders random ones, and
// returns the spread of the last end.
func SimulateOrders(jobs []Job, l Limits) Spread {
	n := len(jobs)
	if n == 0 {
		return Spread{}
	}
	var s Spread
	var sum time.Duration
	add := func(order []int) {
		_, end := Simulate(jobs, order, l)
		if s.Orders == 0 || end < s.Min {
			s.Min = end
		}
		s.Max = max(s.Max, end)
		sum += end
		s.Orders++
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if n <= 7 {
		permute(order, 0, add)
	} else {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		for range maxOrders {
			r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
			add(slices.Clone(order))
		}
	}
	s.Mean = sum / time.Duration(s.Orders)
	return s
}

// permute calls f with every permutation of a[k:] after a[:k] (Heap's algorithm would do; this
// is the plain recursive one).
func permute(a []int, k int, f func([]int)) {
	if k == len(a) {
		f(slices.Clone(a))
		return
	}
	for i := k; i < len(a); i++ {
		a[k], a[i] = a[i], a[k]
		permute(a, k+1, f)
		a[k], a[i] = a[i], a[k]
	}
}
