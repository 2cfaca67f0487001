package migrationcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// TestSteer: what the steering of a target pod decides, from the same path answer as admission.
// Faults caught, each seen to fail once: a failing path not excluded (steering off); the reverse
// direction ignored (only the source's own report read); warn mode excluding instead of
// preferring; a stale report excluding; an unreported node excluded instead of only preferred
// against; not attached nodes left in; the cluster network label dropped; no-target not reported.
func TestSteer(t *testing.T) {
	mtu := "9000-byte frames from node-0 to node-1 do not arrive"
	type want struct {
		excluded, avoided, unverified []string
		label                         bool
		noTarget                      string
	}
	tests := []struct {
		name   string
		modify func(*CreateInput)
		want   want
		msg    string // substring of the first exclusion's message
	}{
		{name: "every path verified: only the cluster network is required", modify: func(*CreateInput) {}, want: want{label: true}},
		{name: "the source lists node-1 for MTU: excluded", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{excluded: []string{"node-1"}, label: true}, msg: mtu},
		{name: "node-2 lists the source (the reverse direction): excluded too", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1"), report("node-2", failing("node-0", v1beta1.PathOneWay, 0)))
		}, want: want{excluded: []string{"node-2"}, label: true}, msg: "packets from node-2 do not reach node-0"},
		{name: "warn mode: avoided by preference, not excluded", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeWarn})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{avoided: []string{"node-1"}, label: true}},
		{name: "pathHealthy off: paths left out", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeOff})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{label: true}},
		{name: "exempt users do not exempt the steering", modify: func(in *CreateInput) {
			in.Policy = policy(nil, "alice")
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{excluded: []string{"node-1"}, label: true}},
		{name: "a stale report excludes nothing, and a stale source prefers nothing", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", checktest.Stale, failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{label: true}},
		{name: "node-2 never reported: not excluded, verified node-1 preferred", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1"))
		}, want: want{unverified: []string{"node-2"}, label: true}},
		{name: "node-2 not attached to the network: excluded", modify: func(in *CreateInput) {
			in.Network.NotAttached = map[string]string{"node-2": "NotRolled"}
		}, want: want{excluded: []string{"node-2"}, label: true}, msg: "its virt-handler is not on the migration network " + testNAD + " (NotRolled)"},
		{name: "feasibleTarget off: attachment and cluster network left out", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{tgtRule: settings.ModeOff})
			in.Network.NotAttached = map[string]string{"node-2": "NotRolled"}
		}, want: want{}},
		{name: "every target behind a failing path: none is left, and the pod says so", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500), failing("node-2", v1beta1.PathUnreachable, 0)), report("node-1"), report("node-2"))
		}, want: want{excluded: []string{"node-1", "node-2"}, label: true, noTarget: "every node that could take the target pod is behind a failing migration path from node-0"}},
		// A macvlan network over a named NIC has no cluster network: no label may be required (an
		// empty label key made every target pod invalid, and the migration stayed Pending).
		{name: "a network of no cluster network (macvlan): no label, exclusions kept", modify: func(in *CreateInput) {
			in.Network.ClusterNetwork = ""
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{excluded: []string{"node-1"}}, msg: mtu},
		{name: "no migration network in force: nothing to add", modify: func(in *CreateInput) {
			in.CurrentHash = ""
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: want{}},
	}
	for _, tt := range tests {
		for _, indexed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/index=%v", tt.name, indexed), func(t *testing.T) {
				in := pathCreate()
				snap := *in.Network
				in.Network = &snap
				tt.modify(&in)
				if indexed {
					in.index = newNodeIndex(in.Nodes)
				}
				s := Steer(&in)
				names := func(es []Exclusion) []string {
					var out []string
					for _, e := range es {
						out = append(out, e.Node)
					}
					return out
				}
				got := want{excluded: names(s.Excluded), avoided: names(s.Avoided), unverified: s.Unverified, label: s.ClusterNetworkLabel != "", noTarget: s.NoTarget}
				if d := gocmp.Diff(tt.want, got, gocmp.AllowUnexported(want{})); d != "" {
					t.Errorf("steering (-want +got):\n%s", d)
				}
				if tt.msg != "" && (len(s.Excluded) == 0 || !strings.Contains(s.Excluded[0].Message, tt.msg)) {
					t.Errorf("exclusions %+v lack %q", s.Excluded, tt.msg)
				}
				if s.Source != "node-0" || s.Migration != "mig" {
					t.Errorf("source %q, migration %q", s.Source, s.Migration)
				}
			})
		}
	}
}

// TestApplyNeverLoosens holds Apply to the scheduler's own matching (nodeaffinity, as
// kube-scheduler's NodeAffinity filter uses it) on random pods and nodes: after Apply a node
// passes the pod's required node affinity exactly when it passed before, is not excluded and
// carries the cluster network. Faults caught, each seen to fail once: exclusions added to the
// first term only (another term lets an excluded node in); an empty term filled (it matched
// nothing); every term replaced (the VMI's own terms lost); the label requirement left out.
func TestApplyNeverLoosens(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const label = settings.ClusterNetworkLabelPrefix + "mig"
	zones := []string{"a", "b", "c"}
	for iter := 0; iter < 2000; iter++ {
		var nodes []*corev1.Node
		for i := 0; i < 6; i++ {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"zone": zones[rng.IntN(3)]}}}
			if rng.IntN(4) > 0 {
				n.Labels[label] = "true"
			}
			nodes = append(nodes, n)
		}
		pod := &corev1.Pod{}
		switch rng.IntN(4) {
		case 0: // no affinity
		case 1:
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		default:
			var terms []corev1.NodeSelectorTerm
			for k := rng.IntN(3); k >= 0; k-- {
				var term corev1.NodeSelectorTerm
				if rng.IntN(5) > 0 {
					term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zones[rng.IntN(3)]}})
				}
				if rng.IntN(3) == 0 {
					term.MatchFields = append(term.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{nodes[rng.IntN(6)].Name}})
				}
				terms = append(terms, term)
			}
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
		s := Steering{Source: "node-0"}
		if rng.IntN(2) == 0 {
			s.ClusterNetworkLabel = label
		}
		for _, n := range nodes {
			if rng.IntN(4) == 0 {
				s.Excluded = append(s.Excluded, Exclusion{Node: n.Name, Reason: ExcludedPathFailing})
			}
		}
		before := pod.DeepCopy()
		s.Apply(pod)
		was, now := nodeaffinity.GetRequiredNodeAffinity(before), nodeaffinity.GetRequiredNodeAffinity(pod)
		for _, n := range nodes {
			wasOK, _ := was.Match(n)
			nowOK, err := now.Match(n)
			if err != nil {
				t.Fatalf("iteration %d: the steered affinity does not parse: %v", iter, err)
			}
			excluded := slices.ContainsFunc(s.Excluded, func(e Exclusion) bool { return e.Node == n.Name })
			want := wasOK && !excluded && (s.ClusterNetworkLabel == "" || n.Labels[label] == "true")
			if nowOK != want {
				t.Fatalf("iteration %d: node %s %v matches %v after Apply, want %v (before %v, excluded %v)\nbefore %+v\nafter %+v",
					iter, n.Name, n.Labels, nowOK, want, wasOK, excluded, before.Spec.Affinity, pod.Spec.Affinity)
			}
		}
	}
}

// TestApplyPreference: verified healthy nodes score highest, then unverified ones, then the
// avoided, in the scheduler's own scoring of preferred terms; the pod's own preferred terms stay.
// Faults caught, each seen to fail once: the preference naming the verified nodes' complement
// wrongly (an unverified node scoring as verified); the avoided scoring as unverified; the VMI's
// own preferred terms dropped.
func TestApplyPreference(t *testing.T) {
	own := corev1.PreferredSchedulingTerm{Weight: 7, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{own}}}}}
	s := Steering{Source: "node-0", Unverified: []string{"node-2"}, Avoided: []Exclusion{{Node: "node-3", Reason: ExcludedPathFailing}}}
	s.Apply(pod)
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		t.Fatal(err)
	}
	score := map[string]int64{}
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		score[name] = terms.Score(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}}})
	}
	if !(score["node-1"] > score["node-2"] && score["node-2"] > score["node-3"] && score["node-3"] == int64(own.Weight)) {
		t.Errorf("scores %v: want verified > unverified > avoided, the avoided keeping only the pod's own term (%d)", score, own.Weight)
	}
	if pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("preferences only, yet a required term was added: %+v", pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
}

// TestIsMigrationTarget: only virt-launcher pods of a migration; hotplug attachment pods of a
// migration carry the job label too. Fault caught, seen to fail once: the app label not checked.
func TestIsMigrationTarget(t *testing.T) {
	pod := func(labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	tests := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "uid"}, true},
		{map[string]string{kubevirtv1.AppLabel: "virt-launcher"}, false},
		{map[string]string{kubevirtv1.AppLabel: "hotplug-disk", kubevirtv1.MigrationJobLabel: "uid"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsMigrationTarget(pod(tt.labels)); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.labels, got, tt.want)
		}
	}
}

// BenchmarkSteerWorstCasePaths: the steering of the admission worst case's target pod (1,000
// nodes, every constraint, fresh probe results for all), its source with one failing pair, and
// the affinity applied to a copy of a pod.
func BenchmarkSteerWorstCasePaths(b *testing.B) {
	in := worstCasePaths()
	src := in.VMI.Status.NodeName
	rs := []*v1beta1.PathReport{report(src, failing(in.Nodes[1].Name, v1beta1.PathMTU, 1500))}
	for _, n := range in.Nodes {
		if n.Name != src {
			rs = append(rs, report(n.Name))
		}
	}
	in.Paths = healthOf(rs...)
	pod := &corev1.Pod{}
	if s := Steer(&in); len(s.Excluded) != 1 || s.NoTarget != "" {
		b.Fatalf("got %+v, want one exclusion and a target left", s)
	}
	b.ReportAllocs()
	for b.Loop() {
		s := Steer(&in)
		p := pod.DeepCopy()
		s.Apply(p)
	}
}

// TestSteeringSummary: the event's line names each exclusion and its reason, the preference, and
// a missing target. Faults caught, each seen to fail once: the cluster network requirement worded
// in every event (noise on every migration); a stray separator when nothing but the missing target
// is said; a steering whose only change is the spread term left without its event.
func TestSteeringSummary(t *testing.T) {
	tests := []struct {
		s       Steering
		want    string
		notable bool
	}{
		{Steering{Migration: "m", Source: "node-1", ClusterNetworkLabel: "l"}, "target pod of migration m from node-1: ", false},
		{Steering{Migration: "m", Source: "node-1", Excluded: []Exclusion{{Node: "node-2", Message: "why"}}, Unverified: []string{"node-3"}},
			"target pod of migration m from node-1: excluded from the targets: node-2 (why); verified paths preferred over node-3 (path from node-1 not verified yet)", true},
		{Steering{Migration: "m", Source: "node-1", NoTarget: "none fits"},
			"target pod of migration m from node-1: no node is left for it: none fits; the pod stays Pending and KubeVirt fails the migration when it times out", true},
		{Steering{Migration: "m", Source: "node-1", Avoided: []Exclusion{{Node: "node-2", Message: "why"}}},
			"target pod of migration m from node-1: avoided, not excluded (pathHealthy is in warn mode): node-2 (why)", true},
		{Steering{Migration: "m", Source: "node-1", SpreadFrom: []string{"uid-a", "uid-b"}},
			"target pod of migration m from node-1: spread from the target pods of 2 other migrations being placed", true},
		{Steering{Migration: "m", Source: "node-1", SpreadFrom: []string{"uid-a"}, AtInboundLimit: []Exclusion{{Node: "node-2", Message: "1 of 1 in"}}},
			"target pod of migration m from node-1: preferred against, at their inbound migration limit: node-2 (1 of 1 in); spread from the target pod of 1 other migration being placed", true},
	}
	for _, tt := range tests {
		if got := tt.s.Summary(); got != tt.want || tt.s.Notable() != tt.notable {
			t.Errorf("Summary() = %q (notable %v), want %q (%v)", got, tt.s.Notable(), tt.want, tt.notable)
		}
	}
}
