package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

const mi = int64(1) << 20

// report is node's PathReport: its last round ended ended ago (never when negative), interval 4 s,
// and traffic m.
func report(node string, ended time.Duration, m *v1beta1.MigrationTraffic) v1beta1.PathReport {
	r := v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, IntervalSeconds: 4, Migration: m,
		Since: metav1.NewMicroTime(now.Add(-time.Hour))}
	if ended >= 0 {
		r.LastRound = &v1beta1.ProbeRound{Completed: metav1.NewMicroTime(now.Add(-ended))}
	}
	return r
}

func enforced(budget, in, out int64) *v1beta1.MigrationTraffic {
	return &v1beta1.MigrationTraffic{BudgetBytesPerSecond: budget, Shaping: v1beta1.ShapingEnforced, WindowSeconds: 4,
		InBytesPerSecond: in, OutBytesPerSecond: out, PeakInBytesPerSecond: in + in/10, PeakOutBytesPerSecond: out}
}

func flight(source, target string, inFlight bool) Row {
	return Row{SourceNode: source, TargetNode: target, InFlight: inFlight}
}

// TestNodes: each row holds the near miss a sloppy change would get wrong — a report one second
// inside its silence bound (fresh) beside one a second past it (silent), a finished migration
// beside one in flight, a node at its inbound limit beside one a migration below it.
func TestNodes(t *testing.T) {
	limit2 := func(string) int { return 2 }
	cases := []struct {
		name string
		in   NodeInput
		want map[string]func(NodeRow) bool
	}{{
		name: "a report inside its silence bound is fresh, one past it silent, a node without one none",
		in: NodeInput{Nodes: []string{"node-1", "node-2", "node-3"}, Reports: []v1beta1.PathReport{
			report("node-1", 11*time.Second, enforced(8*mi, mi, 0)),
			report("node-2", 13*time.Second, enforced(8*mi, mi, 0)),
		}},
		want: map[string]func(NodeRow) bool{
			"node-1": func(r NodeRow) bool { return r.Report == "" && r.ReportAgeSeconds == 11 },
			"node-2": func(r NodeRow) bool { return r.Report == ReportSilent && r.ReportAgeSeconds == 13 },
			"node-3": func(r NodeRow) bool { return r.Report == ReportNone && r.BudgetBytesPerSecond == 0 },
		},
	}, {
		name: "a report of an agent that never finished a round is silent",
		in:   NodeInput{Reports: []v1beta1.PathReport{report("node-1", -1, enforced(8*mi, 0, 0))}},
		want: map[string]func(NodeRow) bool{"node-1": func(r NodeRow) bool { return r.Report == ReportSilent }},
	}, {
		name: "only migrations in flight count, each at both its ends; a node with a migration but no Node is listed",
		in: NodeInput{Nodes: []string{"node-1", "node-2"}, Rows: []Row{
			flight("node-1", "node-2", true), flight("node-1", "node-2", true), flight("node-2", "node-1", false),
			flight("node-1", "node-9", true), flight("node-1", "", true),
		}, InboundLimit: limit2},
		want: map[string]func(NodeRow) bool{
			"node-1": func(r NodeRow) bool { return r.Inbound == 0 && r.Outbound == 4 && r.InboundLimit == 2 },
			"node-2": func(r NodeRow) bool { return r.Inbound == 2 && r.Outbound == 0 },
			"node-9": func(r NodeRow) bool { return r.Inbound == 1 && r.Report == ReportNone },
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			got := Nodes(tc.in)
			seen := map[string]bool{}
			for i, r := range got {
				if i > 0 && got[i-1].Node >= r.Node {
					t.Errorf("not sorted by node: %s before %s", got[i-1].Node, r.Node)
				}
				seen[r.Node] = true
				if check, ok := tc.want[r.Node]; ok && !check(r) {
					t.Errorf("%s: %+v", r.Node, r)
				}
			}
			for n := range tc.want {
				if !seen[n] {
					t.Errorf("%s not listed: %+v", n, got)
				}
			}
		})
	}
}

// TestSummarize: the header's budget line counts what the agents say now — a silent agent's
// Enforced is not counted as shaped, a failed one is named, the busiest share is the larger
// direction's, a node at its limit counts and one below it does not — and says nothing without a
// budget (a node whose agent reports shaping Off has none).
func TestSummarize(t *testing.T) {
	cases := []struct {
		name  string
		nodes []NodeRow
		want  []string // substrings of the line; nil: no summary
		not   string   // what the line must not say
	}{{
		name:  "no node has a budget: nothing to say",
		nodes: []NodeRow{{Node: "node-1", Shaping: v1beta1.ShapingOff}, {Node: "node-2", Report: ReportNone}},
	}, {
		name: "one budget, shaped on the fresh node only; the silent one is said",
		nodes: []NodeRow{
			{Node: "node-1", BudgetBytesPerSecond: 8 * mi, Shaping: v1beta1.ShapingEnforced, InBytesPerSecond: 2 * mi, OutBytesPerSecond: 6 * mi},
			{Node: "node-2", BudgetBytesPerSecond: 8 * mi, Shaping: v1beta1.ShapingEnforced, Report: ReportSilent, InBytesPerSecond: 8 * mi},
			{Node: "node-3"},
		},
		want: []string{"budget: 8Mi/s each way on 2 of 3 nodes, shaped on 1", "1 silent", "busiest node-1 at 75% of its budget"},
	}, {
		name:  "a budget on idle nodes (the probes' bytes round down to 0 %): no busiest named",
		nodes: []NodeRow{{Node: "node-1", BudgetBytesPerSecond: 64 * mi, Shaping: v1beta1.ShapingEnforced, InBytesPerSecond: 900}},
		want:  []string{"budget: 64Mi/s each way on 1 of 1 nodes, shaped on 1"},
		not:   "busiest",
	}, {
		name: "budgets differ, one failed, one node at its inbound limit and one below",
		nodes: []NodeRow{
			{Node: "node-1", BudgetBytesPerSecond: 8 * mi, Shaping: v1beta1.ShapingEnforced, Inbound: 2, InboundLimit: 2},
			{Node: "node-2", BudgetBytesPerSecond: 32 * mi, Shaping: v1beta1.ShapingFailed, ShapingMessage: "no IFB", Inbound: 1, InboundLimit: 2},
		},
		want: []string{"8Mi/s to 32Mi/s each way on 2 of 2 nodes, shaped on 1", "SHAPING FAILED on node-2", "1 at their inbound limit"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.nodes)
			if tc.want == nil {
				if s != nil {
					t.Fatalf("want no summary, got %q", s)
				}
				return
			}
			line := s.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
			if tc.not != "" && strings.Contains(line, tc.not) {
				t.Errorf("%q says %q", line, tc.not)
			}
			if strings.Contains(line, "silent") != (s.Silent > 0) {
				t.Errorf("silent said wrongly: %q", line)
			}
		})
	}
}

// TestPrintNodes: the table says a failed shaping's reason, an override, the inbound limit, a
// silent agent's age, and dashes where a node has no report; JSON carries the rows.
func TestPrintNodes(t *testing.T) {
	rows := []NodeRow{
		{Node: "node-1", BudgetBytesPerSecond: 8 * mi, Override: "nic=25g", Shaping: v1beta1.ShapingEnforced,
			InBytesPerSecond: 7 * mi, PeakInBytesPerSecond: 8 * mi, HeldIn: 12, Inbound: 2, InboundLimit: 2, Outbound: 1, ReportAgeSeconds: 3},
		{Node: "node-2", BudgetBytesPerSecond: 8 * mi, Shaping: v1beta1.ShapingFailed, ShapingMessage: "creating the IFB: operation not permitted",
			Report: ReportSilent, ReportAgeSeconds: 90},
		{Node: "node-3", Report: ReportNone},
	}
	net := Network{Setting: v1beta1.MigrationNetwork, Mode: ModeMigration, Budget: Summarize(rows)}
	var b bytes.Buffer
	if err := PrintNodes(&b, FormatTable, net, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"budget: 8Mi/s each way on 2 of 3 nodes", "8Mi/s (nic=25g)", "7Mi/s (8Mi/s)", "12/0", "2 of 2/1",
		"Failed: creating the IFB: operation not permitted", "SILENT: the figures are 1m30s old", "no report", "last round, 3s ago"} {
		if !strings.Contains(out, w) {
			t.Errorf("the table lacks %q:\n%s", w, out)
		}
	}
	if l := strings.Split(out, "\n"); !strings.HasPrefix(l[2], "NODE") {
		t.Errorf("header, budget line, then the columns:\n%s", out)
	}
	b.Reset()
	if err := PrintNodes(&b, FormatJSON, net, rows); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"node": "node-2"`, `"report": "silent"`, `"inboundLimit": 2`, `"budget": {`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the JSON lacks %s:\n%s", w, b.String())
		}
	}
}
