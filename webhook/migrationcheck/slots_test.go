package migrationcheck

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// TestInboundSlot: rule inboundSlot, with a budget of inbound limit 1 on node-0..3 (the VMI on
// node-0). Each near miss sits next to the row a sloppy change would get wrong. Faults caught,
// each seen to fail once: a cordoned node's free slot counted ("the free node cordoned"); a node
// the VMI's nodeSelector rules out counted ("the free node not selected"); the migrations admitted
// but not placed left out ("one free, one pending"); a reservation the traffic already counts
// counted twice ("reserved and counted": the count looked at it, whatever it made of it); >= for > ("two free, two waiting" against "two free,
// one waiting"); the rule judged without a budget.
func TestInboundSlot(t *testing.T) {
	full := map[string]int{"node-1": 1, "node-2": 1, "node-3": 1}
	twoFull := map[string]int{"node-1": 1, "node-2": 1}
	tests := []struct {
		name     string
		in       map[string]int
		pending  int
		known    []types.UID // the migrations the traffic's count looked at
		reserved []types.UID
		modify   func(*CreateInput)
		refused  string // "" admitted; else in the message
	}{
		{name: "every target full", in: full, refused: "the 3 nodes that could take its target pod have 3 slots (their budgets' inbound limits), 3 in use, and 0 migrations are admitted"},
		{name: "one free", in: twoFull},
		{name: "the free node cordoned (near miss)", in: twoFull, modify: func(c *CreateInput) { checktest.Cordoned(c.Nodes[3]) },
			refused: "the 2 nodes that could take its target pod have 2 slots"},
		{name: "the free node not selected (near miss)", in: twoFull,
			modify:  func(c *CreateInput) { c.VMI.Spec.NodeSelector = map[string]string{"nic": "25g"} },
			refused: "the 1 node that could take its target pod has 1 slot"},
		{name: "the source full: it is no target", in: map[string]int{"node-0": 3, "node-1": 1, "node-2": 1}},
		{name: "one free, one pending (near miss)", in: twoFull, pending: 1, refused: "1 migration is admitted but not placed yet"},
		{name: "one free, one reserved the traffic does not count", in: twoFull, reserved: []types.UID{"uid-x"}, refused: "1 migration is admitted"},
		{name: "one free, reserved and counted (near miss)", in: twoFull, known: []types.UID{"uid-x"}, reserved: []types.UID{"uid-x"}},
		{name: "one free, its own reservation", in: twoFull, reserved: []types.UID{"uid-mig"}},
		{name: "two free, one waiting", in: map[string]int{"node-1": 1}, pending: 1},
		{name: "two free, two waiting (near miss)", in: map[string]int{"node-1": 1}, pending: 1, reserved: []types.UID{"uid-y"},
			refused: "2 migrations are admitted"},
		{name: "an override of 2 for nic=25g: room on node-1", in: full, modify: func(c *CreateInput) {
			c.Policy.Budget.Nodes = []settings.BudgetOverride{{Selector: map[string]string{"nic": "25g"}, InboundMigrations: 2}}
		}},
		{name: "no budget: not judged", in: full, modify: func(c *CreateInput) { c.Policy.Budget = nil }},
		{name: "traffic not counted: not judged", in: full, modify: func(c *CreateInput) { c.Traffic = nil }},
		{name: "no VMI: not judged (vmiState speaks)", in: full, modify: func(c *CreateInput) { c.VMI = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := budgetCreate("1Gi", 1, tt.in)
			in.Traffic.Pending, in.Traffic.seen, in.Reserved = tt.pending, tt.known, tt.reserved
			if tt.modify != nil {
				tt.modify(&in)
			}
			var got *Decision
			for _, d := range EvaluateCreate(in) {
				if d.Rule == settings.RuleInboundSlot {
					got = &d
				} else if in.VMI != nil {
					t.Errorf("another rule spoke: %+v", d)
				}
			}
			switch {
			case tt.refused == "" && got != nil:
				t.Errorf("refused: %s", got.Message)
			case tt.refused != "" && got == nil:
				t.Errorf("admitted, want refused with %q", tt.refused)
			case got != nil && (!got.Deny || !strings.Contains(got.Message, tt.refused) || !strings.Contains(got.Message, "budget.inboundMigrations")):
				t.Errorf("decision %+v, want a denial with %q naming budget.inboundMigrations", got, tt.refused)
			}
		})
	}
}

// TestInboundSlotModes: warn admits with the message, an exempt user skips the rule.
func TestInboundSlotModes(t *testing.T) {
	in := budgetCreate("1Gi", 1, map[string]int{"node-1": 1, "node-2": 1, "node-3": 1})
	in.Policy.Rules = map[settings.Rule]settings.Mode{settings.RuleInboundSlot: settings.ModeWarn}
	ds := EvaluateCreate(in)
	if len(ds) != 1 || ds[0].Deny || !ds[0].Warn {
		t.Errorf("warn mode: %+v, want one warning", ds)
	}
	in.Policy.Rules = nil
	in.Policy.ExemptUsers = []string{in.User}
	if ds := EvaluateCreate(in); len(ds) != 0 {
		t.Errorf("exempt user: %+v, want none", ds)
	}
}

// TestTargetNodesInbound: the preflight node table's inbound column. Faults caught, each seen to
// fail once: "full" from > instead of >= (node-1 at 1 of 1 not full: the near miss), the limit
// taken without the node's override (node-1's nic=25g gives 2), a node that is no target given a
// count (the source, a cordoned node, one behind a failing path), the column filled with no budget
// in force.
func TestTargetNodesInbound(t *testing.T) {
	in := budgetCreate("1Gi", 1, map[string]int{"node-1": 1, "node-2": 1})
	cordoned := node("node-4")
	checktest.Cordoned(cordoned)
	in.Nodes = append(in.Nodes, cordoned)
	got := func(c CreateInput) map[string]string {
		out := map[string]string{}
		for _, nv := range TargetNodes(&c) {
			out[nv.Node] = nv.Inbound
		}
		return out
	}
	want := map[string]string{"node-0": "", "node-1": "1/1 full", "node-2": "1/1 full", "node-3": "0/1", "node-4": ""}
	if d := gocmp.Diff(want, got(in)); d != "" {
		t.Errorf("inbound (-want +got):\n%s", d)
	}
	behind := in
	behind.Paths = healthOf(report("node-0", failing("node-3", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"), report("node-3"))
	if d := gocmp.Diff(map[string]string{"node-0": "", "node-1": "1/1 full", "node-2": "1/1 full", "node-3": "", "node-4": ""}, got(behind)); d != "" {
		t.Errorf("inbound with node-3 behind a failing path (-want +got):\n%s", d)
	}
	in.Policy.Budget.Nodes = []settings.BudgetOverride{{Selector: map[string]string{"nic": "25g"}, InboundMigrations: 2}}
	want["node-1"] = "1/2"
	if d := gocmp.Diff(want, got(in)); d != "" {
		t.Errorf("inbound with node-1's override (-want +got):\n%s", d)
	}
	in.Policy.Budget = nil
	if d := gocmp.Diff(map[string]string{"node-0": "", "node-1": "", "node-2": "", "node-3": "", "node-4": ""}, got(in)); d != "" {
		t.Errorf("inbound without a budget (-want +got):\n%s", d)
	}
}
