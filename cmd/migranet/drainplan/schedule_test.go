package drainplan

import (
	"testing"
	"time"
)

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       Limits
		slots   int
		binding string
	}{
		{"KubeVirt's defaults: the per-node limit binds", Limits{Outbound: 2, Cluster: 5}, 2, "parallelOutboundMigrationsPerNode"},
		// The near miss: migrations elsewhere leave exactly as many cluster slots as the node's.
		{"cluster slots left equal the per-node limit", Limits{Outbound: 2, Cluster: 5, Elsewhere: 3}, 2, "parallelOutboundMigrationsPerNode and parallelMigrationsPerCluster alike"},
		{"one cluster slot left: the cluster limit binds", Limits{Outbound: 2, Cluster: 5, Elsewhere: 4}, 1, "parallelMigrationsPerCluster (with migrations running from other nodes)"},
		{"a cluster limit below the per-node one", Limits{Outbound: 4, Cluster: 3}, 3, "parallelMigrationsPerCluster"},
		{"no cluster slot left", Limits{Outbound: 2, Cluster: 5, Elsewhere: 5}, 0, "parallelMigrationsPerCluster (with migrations running from other nodes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Slots(); got != tc.slots {
				t.Errorf("Slots() = %d, want %d", got, tc.slots)
			}
			if got := tc.l.Binding(); got != tc.binding {
				t.Errorf("Binding() = %q, want %q", got, tc.binding)
			}
		})
	}
}

func TestSimulate(t *testing.T) {
	s := time.Second
	jobs := []Job{{"a", "n2", 10 * s}, {"b", "n2", 10 * s}, {"c", "n3", 4 * s}, {"d", "n3", 4 * s}}
	for _, tc := range []struct {
		name   string
		l      Limits
		order  []int
		end    time.Duration
		starts []time.Duration
	}{
		{"one at a time: the sum", Limits{Outbound: 1, Cluster: 5}, []int{0, 1, 2, 3}, 28 * s, []time.Duration{0, 10 * s, 20 * s, 24 * s}},
		{"two at a time", Limits{Outbound: 2, Cluster: 5}, []int{0, 1, 2, 3}, 14 * s, []time.Duration{0, 0, 10 * s, 10 * s}},
		{"two at a time, short ones first", Limits{Outbound: 2, Cluster: 5}, []int{2, 3, 0, 1}, 14 * s, []time.Duration{4 * s, 4 * s, 0, 0}},
		{"two per node but one cluster slot left", Limits{Outbound: 2, Cluster: 5, Elsewhere: 4}, []int{0, 1, 2, 3}, 28 * s, []time.Duration{0, 10 * s, 20 * s, 24 * s}},
		// The seam for a per-node inbound limit: the two to n2 never run together; the
		// evacuation takes the next candidate whose target has room.
		{"an inbound limit of one per node", Limits{Outbound: 2, Cluster: 5, Inbound: func(string) int { return 1 }}, []int{0, 1, 2, 3}, 20 * s, []time.Duration{0, 10 * s, 0, 4 * s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, end := Simulate(jobs, tc.order, tc.l)
			if end != tc.end {
				t.Errorf("end %s, want %s", end, tc.end)
			}
			for i, want := range tc.starts {
				if runs[i].Start != want || runs[i].End != want+jobs[i].Took {
					t.Errorf("job %s runs %s–%s, want from %s", jobs[i].Name, runs[i].Start, runs[i].End, want)
				}
			}
		})
	}
}

func TestSimulateOrders(t *testing.T) {
	s := time.Second
	jobs := []Job{{"a", "n2", 10 * s}, {"b", "n2", 10 * s}, {"c", "n3", 4 * s}}
	sp := SimulateOrders(jobs, Limits{Outbound: 2, Cluster: 5})
	// a,b first: 14 s; c first: 4+10=14 then... every order of two long and a short ends at 14 s
	// except a short one first beside a long: c(4) then b starts at 4 → 14; a long pair first → 14.
	if sp.Orders != 6 || sp.Min != 14*s || sp.Max != 14*s {
		t.Errorf("spread %+v", sp)
	}
	jobs = append(jobs, Job{"d", "n3", 4 * s})
	sp = SimulateOrders(jobs, Limits{Outbound: 2, Cluster: 5})
	if sp.Orders != 24 || sp.Min != 14*s || sp.Max != 18*s || sp.Mean <= sp.Min || sp.Mean >= sp.Max {
		t.Errorf("spread %+v, want 24 orders from 14s to 18s", sp)
	}
	many := make([]Job, 9)
	for i := range many {
		many[i] = Job{Name: "j", Took: time.Duration(i+1) * s}
	}
	if sp := SimulateOrders(many, Limits{Outbound: 2, Cluster: 5}); sp.Orders != maxOrders || sp.Min < 23*s || sp.Max > 45*s {
		t.Errorf("nine jobs: %+v", sp)
	}
}
