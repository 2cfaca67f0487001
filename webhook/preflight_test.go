package webhook

import (
	"context"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	for _, tc := range []struct {
		name string
		in   CreateInput
		want map[settings.Rule]string
	}{
		{"all pass", baseCreate(), map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictPass, vmiRule: VerdictPass}},
		{"pinned", pinned, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictFail, vmiRule: VerdictPass}},
		{"warn and off", warnAll, map[settings.Rule]string{kvRule: VerdictOff, netRule: VerdictPass, tgtRule: VerdictWarn, vmiRule: VerdictPass}},
		{"exempt", exempt, map[settings.Rule]string{kvRule: VerdictExempt, netRule: VerdictExempt, tgtRule: VerdictExempt, vmiRule: VerdictPass}},
		{"missing VMI", missing, map[settings.Rule]string{kvRule: VerdictPass, netRule: VerdictPass, tgtRule: VerdictSkipped, vmiRule: VerdictFail}},
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

// TestPreflightMatchesValidateCreate: Preflight answers with ValidateCreate's words.
func TestPreflightMatchesValidateCreate(t *testing.T) {
	v, _, _, _ := newTestValidator(t)
	ctx := context.Background()
	for _, name := range []string{testVMI, "pinned", "missing"} {
		m := vmim("move-"+name, name, "")
		p, err := v.Preflight(ctx, m, authenticationv1.UserInfo{Username: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		warnings, refusal := v.ValidateCreate(ctx, m)
		if p.Admitted != (refusal == nil) || (refusal != nil && p.Refusal != refusal.Error()) || !gocmp.Equal([]string(warnings), p.Warnings, cmpEmpty) {
			t.Errorf("%s: preflight %+v, webhook warnings %v refusal %v", name, p, warnings, refusal)
		}
		if (name == "missing") != (p.Nodes == nil) {
			t.Errorf("%s: nodes %+v", name, p.Nodes)
		}
	}
}

var cmpEmpty = gocmp.Comparer(func(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") })

// listRecorder records the options of the one list it answers.
type listRecorder struct {
	client.Reader
	items []kubevirtv1.VirtualMachineInstanceMigration
	opts  *client.ListOptions
}

func (l *listRecorder) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.opts = (&client.ListOptions{}).ApplyOptions(opts)
	list.(*kubevirtv1.VirtualMachineInstanceMigrationList).Items = append([]kubevirtv1.VirtualMachineInstanceMigration(nil), l.items...)
	return nil
}

func TestAPIReaderFiltersByVMIName(t *testing.T) {
	l := &listRecorder{items: []kubevirtv1.VirtualMachineInstanceMigration{*vmim("a", "vm", ""), *vmim("b", "other", ""), *vmim("c", "vm", "")}}
	got := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := APIReader(l).List(context.Background(), got, client.InNamespace(testNS), client.MatchingFields{vmiNameIndex: "vm"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got.Items {
		names = append(names, m.Name)
	}
	if d := gocmp.Diff([]string{"a", "c"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if l.opts.FieldSelector != nil && !l.opts.FieldSelector.Empty() || l.opts.Namespace != testNS {
		t.Errorf("the API server was asked with field selector %v in namespace %q", l.opts.FieldSelector, l.opts.Namespace)
	}
}
