package env

import (
	"slices"
	"testing"
)

// TestProbeArgsFor: the fault it catches is a scale rig that starts too early (a small lab no
// longer runs the agents' defaults: 4 s rounds, entries removed) or never (100 nodes at 4 s
// rounds, which the machine cannot carry), or an interval that is not whole seconds.
func TestProbeArgsFor(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		interval string
		keep     bool
	}{
		{1, "--interval=4s", false},
		{3, "--interval=4s", false},
		{25, "--interval=4s", false}, // the last small lab
		{26, "--interval=6s", true},  // the first scale rig: 26/5 rounded up
		{50, "--interval=10s", true},
		{100, "--interval=20s", true}, // the DaemonSet's own default
		{1000, "--interval=200s", true},
	} {
		args, why := ProbeArgsFor(tc.nodes)
		if !slices.Contains(args, tc.interval) {
			t.Errorf("%d nodes: %q, want %s", tc.nodes, args, tc.interval)
		}
		if got := slices.Contains(args, "--keep-neighbour-entries"); got != tc.keep {
			t.Errorf("%d nodes: keeps neighbour entries %v, want %v", tc.nodes, got, tc.keep)
		}
		if (why != "") != tc.keep {
			t.Errorf("%d nodes: why %q", tc.nodes, why)
		}
	}
}
