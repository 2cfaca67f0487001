package migrationcheck

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

func verdictsOf(rs []RuleVerdict) map[settings.Rule]string {
	out := map[settings.Rule]string{}
	for _, r := range rs {
		out[r.Rule] = r.Verdict
	}
	return out
}

func TestRuleVerdicts(t *testing.T) {
	pinned := baseCreate()
	pinned.VMI = vmi("node-0", map[string]string{"kubernetes.io/hostname": "node-0"})
	warnAll := baseCreate()
	warnAll.Policy = policy(map[settings.Rule]settings.Mode{tgtRule: settings.ModeWarn, kvRule: settings.ModeOff})
	warnAll.VMI = pinned.VMI
	exempt := pinned
	exempt.Policy = policy(nil, "alice")
	missing := baseCreate()
	missing.VMI = nil
	full := budgetCreate("1Gi", 1, map[string]int{"node-1": 1, "node-2": 1, "node-3": 1})
	room := budgetCreate("1Gi", 1, map[string]int{"node-1": 1, "node-2": 1})
	const slotRule = settings.RuleInboundSlot
	for _, tc := range []struct {
		name string
		in   CreateInput
		want map[settings.Rule]string
	}{
		{"all pass", baseCreate(), map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictPass, pathRule: VerdictPass, vmiRule: VerdictPass, slotRule: VerdictSkipped}},
		{"pinned", pinned, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictFail, pathRule: VerdictPass, vmiRule: VerdictPass, slotRule: VerdictSkipped}},
		{"warn and off", warnAll, map[settings.Rule]string{kvRule: VerdictOff, netRule: VerdictPass, tgtRule: VerdictWarn, pathRule: VerdictPass, vmiRule: VerdictPass, slotRule: VerdictSkipped}},
		{"exempt", exempt, map[settings.Rule]string{kvRule: VerdictExempt, netRule: VerdictExempt, tgtRule: VerdictExempt, pathRule: VerdictExempt, vmiRule: VerdictPass, slotRule: VerdictExempt}},
		{"missing VMI", missing, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictSkipped, pathRule: VerdictSkipped, vmiRule: VerdictFail, slotRule: VerdictSkipped}},
		{"budget, every target full", full, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictPass, pathRule: VerdictPass, vmiRule: VerdictPass, slotRule: VerdictFail}},
		{"budget, a slot free (near miss)", room, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictPass, pathRule: VerdictPass, vmiRule: VerdictPass, slotRule: VerdictPass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := EvaluateCreate(tc.in)
			got := ruleVerdicts(&tc.in, ds)
			if d := gocmp.Diff(tc.want, verdictsOf(got)); d != "" {
				t.Fatalf("verdicts (-want +got):\n%s", d)
			}
			for i, r := range got {
				if (r.Verdict == VerdictFail || r.Verdict == VerdictWarn) != (r.Message != "") {
					t.Errorf("rule %d %s: verdict %s with message %q", i, r.Rule, r.Verdict, r.Message)
				}
			}
		})
	}
}

func TestTargetNodes(t *testing.T) {
	in := baseCreate()
	in.VMIM.Spec.AddedNodeSelector = map[string]string{"zone": "a"}
	in.Nodes = []*corev1.Node{
		node("node-0", withLabels("zone", "a")),
		node("node-1", withLabels("zone", "a"), cordoned),
		node("node-2", withLabels("zone", "b")),
		node("node-3", withLabels("zone", "a"), withoutLabel(settings.ClusterNetworkLabelPrefix+testCN)),
		node("node-4", withLabels("zone", "a"), notReady),
		node("node-5", withLabels("zone", "a", settings.WitnessLabel, "")),
		node("node-6", withLabels("zone", "a")),
	}
	got := TargetNodes(&in)
	want := []struct {
		fits   bool
		reason string
	}{
		{false, "is its source node"}, {false, "is cordoned"}, {false, "lacks label zone=a (spec.addedNodeSelector)"},
		{false, "does not carry the cluster network " + testCN}, {false, "is not Ready"}, {false, "does not run virt-handler"}, {true, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d node verdicts, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Fits != w.fits || !strings.Contains(got[i].Reason, w.reason) || (w.reason == "") != (got[i].Reason == "") {
			t.Errorf("%s: got fits=%v %q, want fits=%v containing %q", got[i].Node, got[i].Fits, got[i].Reason, w.fits, w.reason)
		}
	}

	// A conflict between the selectors: no node fits, each says why.
	in.VMI.Spec.NodeSelector = map[string]string{"zone": "b"}
	for _, nv := range TargetNodes(&in) {
		if nv.Fits || nv.Reason == "" {
			t.Errorf("%s with conflicting selectors: fits=%v %q", nv.Node, nv.Fits, nv.Reason)
		}
	}
}

// TestTargetNodesAgreeWithFeasibleTarget: some node fits exactly when feasibleTarget passes, over
// every combination of node faults.
func TestTargetNodesAgreeWithFeasibleTarget(t *testing.T) {
	faults := []nodeOpt{cordoned, notReady, withLabels("zone", "b"), withoutLabel(settings.ClusterNetworkLabelPrefix + testCN), nil}
	for mask := 0; mask < len(faults)*len(faults)*len(faults); mask++ {
		in := baseCreate()
		in.VMIM.Spec.AddedNodeSelector = map[string]string{"zone": "a"}
		in.Nodes = []*corev1.Node{node("node-0", withLabels("zone", "a"))}
		for i, m := 0, mask; i < 3; i, m = i+1, m/len(faults) {
			opts := []nodeOpt{withLabels("zone", "a")}
			if f := faults[m%len(faults)]; f != nil {
				opts = append(opts, f)
			}
			in.Nodes = append(in.Nodes, node("node-"+string(rune('1'+i)), opts...))
		}
		fits := false
		for _, nv := range TargetNodes(&in) {
			fits = fits || nv.Fits
		}
		_, msg, _ := infeasible(&in)
		if fits != (msg == "") {
			t.Fatalf("mask %d: a node fits = %v, but feasibleTarget says %q", mask, fits, msg)
		}
	}
}
