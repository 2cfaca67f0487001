package migrationcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// budgetCreate is pathCreate with nodes node-0..3 (node-1 labelled nic=25g, node-2 nic=10g), a
// budget of bandwidth bw and inbound limit inbound, and the migrations streaming into nodes in.
func budgetCreate(bw string, inbound int, in map[string]int) CreateInput {
	c := pathCreate()
	c.Nodes = []*corev1.Node{node("node-0"), checktest.Node("node-1", checktest.WithLabels("nic", "25g")),
		checktest.Node("node-2", checktest.WithLabels("nic", "10g")), node("node-3")}
	c.Paths = checktest.HealthyPaths("node-0", "node-1", "node-2", "node-3")
	c.Policy = &settings.MigrationPolicy{Budget: &settings.Budget{Bandwidth: resource.MustParse(bw), InboundMigrations: inbound}}
	c.Traffic = &Traffic{In: in, Out: map[string]int{}}
	return c
}

func perMigration(c *CreateInput, q string) {
	kv := c.KubeVirt.DeepCopy()
	bw := resource.MustParse(q)
	kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{BandwidthPerMigration: &bw}
	c.KubeVirt = kv
}

// TestAtInboundLimit: which nodes the steering prefers against by their budgets. Faults caught,
// each seen to fail once: > instead of >= (the "one below its limit" near miss listed, or "at its
// limit" not); an override matched by key only (node-2, nic=10g, took the 25g entry's limit: the
// "selector value differs" near miss); the derived limit not capped by KubeVirt's outbound limit
// with bandwidthPerMigration unlimited; the source, or an excluded node, listed.
func TestAtInboundLimit(t *testing.T) {
	override := func(c *CreateInput) {
		c.Policy.Budget.Nodes = []settings.BudgetOverride{{Selector: map[string]string{"nic": "25g"}, InboundMigrations: 3}}
	}
	tests := []struct {
		name   string
		in     CreateInput
		modify func(*CreateInput)
		skip   map[string]bool
		want   []string
	}{
		{name: "at its limit of 2", in: budgetCreate("1Gi", 2, map[string]int{"node-1": 2}), want: []string{"node-1"}},
		{name: "above its limit", in: budgetCreate("1Gi", 2, map[string]int{"node-3": 3}), want: []string{"node-3"}},
		{name: "one below its limit: room left (near miss)", in: budgetCreate("1Gi", 2, map[string]int{"node-1": 1})},
		{name: "an override's limit of 3 for nic=25g: room left", in: budgetCreate("1Gi", 2, map[string]int{"node-1": 2}), modify: override},
		{name: "selector value differs (nic=10g): the budget's own limit (near miss)", in: budgetCreate("1Gi", 2, map[string]int{"node-2": 2}),
			modify: override, want: []string{"node-2"}},
		{name: "derived: 1Gi / (512Mi + headers) is 1", in: budgetCreate("1Gi", 0, map[string]int{"node-1": 1}),
			modify: func(c *CreateInput) { perMigration(c, "512Mi") }, want: []string{"node-1"}},
		{name: "derived: 2Gi / (512Mi + headers) is 3, 2 leave room", in: budgetCreate("2Gi", 0, map[string]int{"node-1": 2}),
			modify: func(c *CreateInput) { perMigration(c, "512Mi") }},
		{name: "derived, bandwidthPerMigration unlimited: capped at KubeVirt's 2 outbound", in: budgetCreate("100Gi", 0, map[string]int{"node-1": 2}),
			want: []string{"node-1"}},
		{name: "the source is never listed", in: budgetCreate("1Gi", 1, map[string]int{"node-0": 4})},
		{name: "an excluded node is not listed twice", in: budgetCreate("1Gi", 1, map[string]int{"node-1": 1, "node-2": 1}),
			skip: map[string]bool{"node-1": true}, want: []string{"node-2"}},
		{name: "a node that is gone", in: budgetCreate("1Gi", 1, map[string]int{"node-9": 4})},
		{name: "no budget: nothing counted", in: budgetCreate("1Gi", 1, map[string]int{"node-1": 4}),
			modify: func(c *CreateInput) { c.Policy.Budget = nil }},
		{name: "traffic not counted", in: budgetCreate("1Gi", 1, nil), modify: func(c *CreateInput) { c.Traffic = nil }},
	}
	for _, tt := range tests {
		for _, indexed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/index=%v", tt.name, indexed), func(t *testing.T) {
				in := tt.in
				if tt.modify != nil {
					tt.modify(&in)
				}
				if indexed {
					in.index = newNodeIndex(in.Nodes)
				}
				var got []string
				for _, e := range AtInboundLimit(&in, "node-0", tt.skip) {
					got = append(got, e.Node)
					if e.Reason != ExcludedAtInboundLimit || !strings.Contains(e.Message, "inbound limit is") {
						t.Errorf("entry %+v", e)
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("AtInboundLimit = %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// TestSteerBudget: a node at its inbound limit becomes a preferred term against it (never a
// required one: the pod is never held), next to the path preferences, and is named in the event.
// Faults caught, each seen to fail once: the nodes at their limit added to the required terms
// (the pod could be held Pending); Changes ignoring them (a pod with only a budget preference left
// unpatched when the network has no cluster network label); the summary leaving them out.
func TestSteerBudget(t *testing.T) {
	in := budgetCreate("1Gi", 1, map[string]int{"node-1": 1})
	in.Network.ClusterNetwork = ""
	s := Steer(&in)
	if len(s.AtInboundLimit) != 1 || s.AtInboundLimit[0].Node != "node-1" || !s.Changes() || !s.Notable() {
		t.Fatalf("steering %+v: want node-1 at its inbound limit, a change, notable", s)
	}
	if !strings.Contains(s.Summary(), "at their inbound migration limit: node-1 (1 migrations stream into it, its inbound limit is 1 (budget 1Gi/s))") {
		t.Errorf("summary %q", s.Summary())
	}
	pod := &corev1.Pod{}
	s.Apply(pod)
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("required terms %+v: a node at its limit must only be preferred against", na.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	want := []corev1.PreferredSchedulingTerm{{Weight: budgetWeight, Preference: corev1.NodeSelectorTerm{MatchFields: notIn([]string{"node-1"})}}}
	if fmt.Sprint(na.PreferredDuringSchedulingIgnoredDuringExecution) != fmt.Sprint(want) {
		t.Errorf("preferred terms %+v, want %+v", na.PreferredDuringSchedulingIgnoredDuringExecution, want)
	}
}

// BenchmarkSteerWorstCaseBudget: BenchmarkSteerWorstCasePaths's steering, indexed as the webhook
// reads it, without a budget ("off", the same-run baseline) and with one (inbound limit 2) while
// 100 migrations stream two each into 50 of the 1,000 nodes ("on"): the difference is
// AtInboundLimit's (a label match, a map read and a message per node something streams into), the
// longer preferred term, and the spread term naming 100 migrations whose target pods are being
// placed (the cap; a drain has a few at once).
func BenchmarkSteerWorstCaseBudget(b *testing.B) {
	in := worstCasePaths()
	src := in.VMI.Status.NodeName
	rs := []*v1beta1.PathReport{report(src, failing(in.Nodes[1].Name, v1beta1.PathMTU, 1500))}
	for _, n := range in.Nodes {
		if n.Name != src {
			rs = append(rs, report(n.Name))
		}
	}
	in.Paths = healthOf(rs...)
	in.index = newNodeIndex(in.Nodes)
	traffic := &Traffic{In: map[string]int{}, Out: map[string]int{}}
	for i := range 50 {
		traffic.In[in.Nodes[500+i].Name] = 2
	}
	for i := range 100 { // and 100 more being placed: a spread term of 100 UIDs (the cap)
		traffic.Placing = append(traffic.Placing, types.UID(fmt.Sprintf("uid-%03d", i)))
	}
	in.Traffic = traffic
	budget := &settings.Budget{Bandwidth: resource.MustParse("1Gi"), InboundMigrations: 2}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			in := in
			in.Policy = &settings.MigrationPolicy{}
			want := 0
			if on {
				in.Policy.Budget, want = budget, 50
			}
			pod := &corev1.Pod{}
			if s := Steer(&in); len(s.AtInboundLimit) != want || s.NoTarget != "" {
				b.Fatalf("got %d at their limit, no target %q; want %d and a target left", len(s.AtInboundLimit), s.NoTarget, want)
			}
			b.ReportAllocs()
			for b.Loop() {
				s := Steer(&in)
				p := pod.DeepCopy()
				s.Apply(p)
			}
		})
	}
}

// TestAtInboundLimitMemo: the full list is worked out once per count of the traffic and reused
// only with the same policy, KubeVirt CR and node index. Faults caught: a memo keyed by the
// traffic alone (a new policy's limit, a KubeVirt CR's bandwidthPerMigration or a node's new
// labels not seen until the next migration event), the source or a skipped node of the first
// pod left out for the next.
func TestAtInboundLimitMemo(t *testing.T) {
	c := budgetCreate("1Gi", 2, map[string]int{"node-1": 2, "node-3": 2})
	c.index = newNodeIndex(c.Nodes)
	names := func(c *CreateInput, source string, skip map[string]bool) string {
		var out []string
		for _, e := range AtInboundLimit(c, source, skip) {
			out = append(out, e.Node)
		}
		return strings.Join(out, ",")
	}
	if got := names(&c, "node-1", nil); got != "node-3" {
		t.Fatalf("first pod (source node-1): %q, want node-3", got)
	}
	if c.Traffic.atLimit.Load() == nil {
		t.Fatal("nothing kept: every pod works the list out again")
	}
	if got := names(&c, "node-0", map[string]bool{"node-3": true}); got != "node-1" {
		t.Errorf("second pod (source node-0, node-3 excluded): %q, want node-1", got)
	}
	if got := names(&c, "node-0", nil); got != "node-1,node-3" {
		t.Errorf("third pod: %q, want both", got)
	}
	for _, tc := range []struct {
		name          string
		setup, change func(c *CreateInput)
		want          string
	}{
		{"a new policy (inbound limit 3)", nil, func(c *CreateInput) {
			c.Policy = &settings.MigrationPolicy{Budget: &settings.Budget{Bandwidth: resource.MustParse("1Gi"), InboundMigrations: 3}}
		}, ""},
		{"a new KubeVirt CR (bandwidthPerMigration 512Mi -> 256Mi: a 1Gi budget holds 1, then 3)", func(c *CreateInput) {
			c.Policy.Budget.InboundMigrations = 0
			perMigration(c, "512Mi")
		}, func(c *CreateInput) { perMigration(c, "256Mi") }, ""},
		{"node-1 relabelled into an override of limit 3 (a new node index)", func(c *CreateInput) {
			c.Policy.Budget.Nodes = []settings.BudgetOverride{{Selector: map[string]string{"nic": "40g"}, InboundMigrations: 3}}
		}, func(c *CreateInput) {
			nodes := slices.Clone(c.Nodes)
			nodes[1] = checktest.Node("node-1", checktest.WithLabels("nic", "40g"))
			c.Nodes, c.index = nodes, newNodeIndex(nodes)
		}, "node-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.Policy = &settings.MigrationPolicy{Budget: &settings.Budget{Bandwidth: resource.MustParse("1Gi"), InboundMigrations: 2}}
			c.Traffic = &Traffic{In: map[string]int{"node-1": 2, "node-3": 2}}
			if tc.setup != nil {
				tc.setup(&c)
			}
			if got := names(&c, "node-0", nil); got != "node-1,node-3" {
				t.Fatalf("before: %q, want both at their limit", got)
			}
			tc.change(&c)
			if got := names(&c, "node-0", nil); got != tc.want {
				t.Errorf("after %s: %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// TestSteerSpreads: with a budget, the target pod is preferred away from the target pods of the
// other migrations being placed, in every namespace, per node. Faults caught, each seen to fail
// once: its own migration listed ("own UID" near miss: the pod would be preferred away from
// itself, harmless but a term per pod that means nothing when it is the only one); the term
// without a namespace selector (only its own namespace's target pods counted: the "other
// namespace" check); a term added without a budget.
func TestSteerSpreads(t *testing.T) {
	const own = types.UID("uid-mig")
	uids := func(n int) []types.UID {
		var out []types.UID
		for i := range n {
			out = append(out, types.UID(fmt.Sprintf("uid-%03d", i)))
		}
		return out
	}
	tests := []struct {
		name    string
		placing []types.UID
		budget  bool
		want    []string
	}{
		{name: "two others and its own: the two", placing: []types.UID{"uid-a", own, "uid-b"}, budget: true, want: []string{"uid-a", "uid-b"}},
		{name: "only its own: none (near miss)", placing: []types.UID{own}, budget: true},
		{name: "no budget: none", placing: []types.UID{"uid-a"}},
		{name: "100 others and its own: all 100", placing: append(uids(100), own), budget: true, want: func() []string {
			var s []string
			for _, u := range uids(100) {
				s = append(s, string(u))
			}
			return s
		}()},
		{name: "101 others: none (past maxPreferred)", placing: uids(101), budget: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := budgetCreate("1Gi", 1, nil)
			if in.VMIM.UID != own {
				t.Fatalf("the fixture's migration is %s, not %s", in.VMIM.UID, own)
			}
			in.Traffic.Placing = tt.placing
			if !tt.budget {
				in.Policy.Budget = nil
			}
			s := Steer(&in)
			if !slices.Equal(s.SpreadFrom, tt.want) {
				t.Fatalf("SpreadFrom = %v, want %v", s.SpreadFrom, tt.want)
			}
			pod := &corev1.Pod{}
			s.Apply(pod)
			var terms []corev1.WeightedPodAffinityTerm
			if pod.Spec.Affinity != nil && pod.Spec.Affinity.PodAntiAffinity != nil {
				terms = pod.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			}
			if len(tt.want) == 0 {
				if len(terms) != 0 {
					t.Errorf("anti-affinity %+v, want none", terms)
				}
				return
			}
			if len(terms) != 1 {
				t.Fatalf("anti-affinity %+v, want one term", terms)
			}
			term := terms[0].PodAffinityTerm
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			other := labels.Set{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: tt.want[0]}
			mine := labels.Set{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: string(own)}
			if !sel.Matches(other) || sel.Matches(mine) || terms[0].Weight != budgetWeight || term.TopologyKey != corev1.LabelHostname {
				t.Errorf("term %+v: want weight %d, per hostname, matching %s's target pod and not its own", terms[0], budgetWeight, tt.want[0])
			}
			if term.NamespaceSelector == nil || len(term.NamespaceSelector.MatchLabels)+len(term.NamespaceSelector.MatchExpressions) != 0 {
				t.Errorf("namespace selector %v: want the empty selector (every namespace: the other namespace's target pods count)", term.NamespaceSelector)
			}
		})
	}
}
