package drainplan

import (
	"strings"
	"testing"
)

// Faults caught: the drained node's budget not shared by its parallel migrations (the plan
// optimistic by parallelOutbound x), the target's budget ignored, a budget above the measured
// throughput raising it, a node without a budget (0) read as a cap of 0.
func TestBudgetCapped(t *testing.T) {
	const mi = int64(1) << 20
	bw := map[string]int64{"drained": 200 * mi, "narrow": 50 * mi, "wide": 1000 * mi}
	b := &Budget{Bandwidth: func(n string) int64 { return bw[n] }}
	measured := Measured{BytesPerSecond: 300 * mi, From: "measured"}
	for _, tc := range []struct {
		name           string
		b              *Budget
		source, target string
		slots          int
		want           int64
		from           string
	}{
		{"two out of the drained node share its 200Mi", b, "drained", "wide", 2, 100 * mi, "drained's budget 200.0 MiB/s shared by 2"},
		{"near miss: one at a time gets the whole 200Mi", b, "drained", "wide", 1, 200 * mi, "shared by 1"},
		{"the target's 50Mi is below the drained node's share", b, "drained", "narrow", 2, 50 * mi, "narrow's budget 50.0 MiB/s"},
		{"near miss: budgets above the measured throughput change nothing", b, "wide", "wide", 1, 300 * mi, "measured"},
		{"a source without a budget: the target's", b, "other", "narrow", 2, 50 * mi, "narrow's budget"},
		{"near miss: neither has a budget (0 is none, not a cap of 0)", b, "other", "another", 2, 300 * mi, "measured"},
		{"no budget at all", nil, "drained", "narrow", 2, 300 * mi, "measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.b.Capped(measured, tc.source, tc.target, tc.slots)
			if got.BytesPerSecond != tc.want || !strings.Contains(got.From, tc.from) {
				t.Errorf("Capped = %d (%s), want %d (%q)", got.BytesPerSecond, got.From, tc.want, tc.from)
			}
		})
	}
}

func TestBudgetWords(t *testing.T) {
	lim := map[string]int{"a": 2, "b": 2, "c": 4}
	b := &Budget{Inbound: func(n string) int { return lim[n] }}
	for _, tc := range []struct {
		targets []string
		want    string
	}{
		{[]string{"a", "b"}, "2 per target node"},
		{[]string{"a", "c", "x"}, "2 to 4 per target node"},
		{[]string{"x"}, ""},
	} {
		if got := b.Words(tc.targets); !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("Words(%v) = %q, want %q…", tc.targets, got, tc.want)
		}
	}
}
