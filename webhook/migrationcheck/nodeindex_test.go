package migrationcheck

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// TestNodeIndexAgreesWithTheWalk judges random clusters and migrations twice, with and without the
// node index, and expects the same answer every time (admission or the very same refusal): random
// labels, cordons, taints and tolerations, required node affinity of every operator, pods filling
// the nodes, and probe results with failing, stale, missing and not yet probed paths. Fault
// caught: a bit set that drops a node the walk would accept (a NotIn that excludes nodes without
// the key, a taint the VMI tolerates) or keeps one it rejects, a usage cell read for the wrong
// node, or a path index that misses an unverified target (a stale node, one not probed yet) or
// names another.
func TestNodeIndexAgreesWithTheWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	pick := func(p int) bool { return rng.IntN(100) < p }
	labelOf := func() (string, string) { return fmt.Sprintf("k%d", rng.IntN(3)), fmt.Sprintf("v%d", rng.IntN(2)) }
	selector := func(p int) map[string]string {
		if !pick(p) {
			return nil
		}
		k, v := labelOf()
		return map[string]string{k: v}
	}
	feasible := 0
	pathCases := map[[3]bool]int{}
	for iter := range 3000 {
		n := 1 + rng.IntN(150) // up to three 64-bit words
		nodes := make([]*corev1.Node, n)
		for i := range nodes {
			var opts []nodeOpt
			switch {
			case pick(10):
				opts = append(opts, notReady)
			case pick(10):
				opts = append(opts, cordoned)
			case pick(5):
				opts = append(opts, withTaint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute))
			case pick(5):
				opts = append(opts, withLabels(settings.WitnessLabel, ""))
			}
			if pick(30) {
				opts = append(opts, withLabels(settings.ClusterNetworkLabelPrefix+testCN, "false"))
			}
			for range rng.IntN(3) {
				k, v := labelOf()
				opts = append(opts, withLabels(k, v))
			}
			if pick(20) {
				tt := randomTaints[rng.IntN(len(randomTaints))]
				opts = append(opts, taint(tt.Key, tt.Value, tt.Effect))
			}
			if pick(30) { // the source's vendor becomes the target pod's (getCPUVendorLabelKey)
				opts = append(opts, withLabels(kubevirtv1.CPUModelVendorLabel+[]string{"Intel", "AMD"}[rng.IntN(2)], "true"))
			}
			opts = append(opts, allocatable("4", "8Gi", "110"))
			nodes[i] = node(fmt.Sprintf("node-%d", i), opts...)
		}
		in := baseCreate()
		in.Nodes = nodes
		source := fmt.Sprintf("node-%d", rng.IntN(n+1)) // node-n: a source that is not in the list
		in.VMI = vmi(source, selector(50))
		in.VMI.UID = "vmi-uid"
		for range rng.IntN(3) {
			in.VMI.Spec.Tolerations = append(in.VMI.Spec.Tolerations, randomTolerations[rng.IntN(len(randomTolerations))])
		}
		if pick(40) {
			in.VMI.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			for range 1 + rng.IntN(2) {
				var term corev1.NodeSelectorTerm
				for range 1 + rng.IntN(2) {
					k, v := labelOf()
					r := corev1.NodeSelectorRequirement{Key: k, Operator: operators[rng.IntN(len(operators))]}
					switch r.Operator {
					case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
						r.Values = []string{v}
					case corev1.NodeSelectorOpGt:
						r.Values = []string{"1"}
					}
					if pick(3) {
						r.Values = []string{"not a label value!"} // the scheduler's selector refuses it
					}
					term.MatchExpressions = append(term.MatchExpressions, r)
				}
				na := in.VMI.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				na.NodeSelectorTerms = append(na.NodeSelectorTerms, term)
			}
		}
		if pick(70) {
			pods := PodList{launcher(source, "1", "2Gi")}
			for i := range n {
				if pick(20) {
					// 3, 2 or 1 GiB left for the 2 GiB target pod: at, on and below its room class.
					mem := []string{"5Gi", "6Gi", "7Gi"}[rng.IntN(3)]
					pods = append(pods, other(fmt.Sprintf("filler-%d", i), fmt.Sprintf("node-%d", i), "1", mem))
				}
			}
			if pick(10) {
				earlier := launcher(fmt.Sprintf("node-%d", rng.IntN(n)), "1", "2Gi")
				earlier.Name = "earlier"
				pods = append(pods, earlier)
			}
			in.Pods = pods
		}
		in.VMIM.Spec.AddedNodeSelector = selector(50)
		if sel := selector(30); sel != nil {
			in.KubeVirt.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: sel}}
		}
		if pick(30) {
			in.CurrentHash = "" // no migration network: the cluster network does not count
		}
		if pick(40) { // nodes whose virt-handler is not on the migration network (yet)
			in.Network = readySnapshot()
			in.Network.NotAttached = map[string]string{}
			for i := range n {
				if pick(30) {
					in.Network.NotAttached[fmt.Sprintf("node-%d", i)] = []string{"NotRolled", "NoIP"}[rng.IntN(2)]
				}
			}
		}
		if pick(50) {
			in.Paths, in.Now = randomPaths(rng, n, source), checktest.Now
		}
		wantF := searchKeeping(&in) // every unverified target listed, as the steering asks
		want := wantF.msg
		in.index = newNodeIndex(nodes)
		if list, ok := in.Pods.(PodList); ok && pick(50) { // the index reads usage from the pod cache's cells
			pc := podCacheOf(list...)
			in.Pods = pc
			in.index.bindPods(pc)
		}
		gotF := searchKeeping(&in)
		if got := gotF.msg; got != want {
			t.Fatalf("iteration %d: with the index %q, walking the nodes %q", iter, got, want)
		}
		if !reflect.DeepEqual(gotF.paths, wantF.paths) {
			t.Fatalf("iteration %d: paths with the index %+v, walking the nodes %+v", iter, gotF.paths, wantF.paths)
		}
		if wantF.pathsOn {
			pathCases[[3]bool{wantF.paths.failing.n > 0, wantF.paths.unverified.n > 0, wantF.paths.sourceUnusable}]++
		}
		// The walk backs up an index that finds nothing, so compare the index alone too: a node
		// it drops wrongly only costs time above, here it fails.
		if tg, conflict := newTarget(&in); conflict == "" && in.index.anyFeasible(tg) != (want == "") {
			t.Fatalf("iteration %d: the index alone disagrees with walking the nodes: %q", iter, want)
		}
		// Once every node's room class is learnt, the index rules nodes out by class alone.
		if in.index.rooms != nil {
			for i := range nodes {
				in.index.hasRoom(i, in.Pods, nil)
			}
			if tg, conflict := newTarget(&in); conflict == "" && in.index.anyFeasible(tg) != (want == "") {
				t.Fatalf("iteration %d: the index with learnt room classes disagrees with walking the nodes: %q", iter, want)
			}
		}
		if want == "" {
			feasible++
		}
	}
	if feasible < 300 || feasible > 2700 {
		t.Errorf("%d of 3000 random migrations were feasible: the generator does not exercise both answers", feasible)
	}
	for _, c := range [][3]bool{{}, {true, false, false}, {false, true, false}, {false, false, true}} {
		if pathCases[c] < 20 {
			t.Errorf("path findings (failing, unverified, source unusable) = %v in %d migrations only: %v", c, pathCases[c], pathCases)
		}
	}
}

// randomPaths is probe results for nodes node-0 … node-(n-1) and one outside them (node-n, a
// source the list lacks): most fresh, some missing, stale, unable to probe or not probed yet,
// and failing paths between random nodes, and at times from the source to most of them.
func randomPaths(rng *rand.Rand, n int, source string) *health.PathHealth {
	pick := func(p int) bool { return rng.IntN(100) < p }
	var reports []*v1beta1.PathReport
	for i := range n + 1 {
		var opts []checktest.ReportOpt
		switch {
		case pick(4):
			continue // never reported
		case pick(4):
			opts = append(opts, checktest.Stale)
		case pick(3):
			opts = append(opts, checktest.Problem(v1beta1.ProbeNoInterface, "no migration0"))
		case pick(4):
			opts = append(opts, checktest.Joined(time.Duration(1+rng.IntN(60))*time.Second))
		}
		for range rng.IntN(3) {
			if pick(40) {
				opts = append(opts, checktest.Failing(fmt.Sprintf("node-%d", rng.IntN(n+1)), []string{v1beta1.PathMTU, v1beta1.PathOneWay, v1beta1.PathUnreachable}[rng.IntN(3)], 1500))
			}
		}
		name := fmt.Sprintf("node-%d", i)
		if name == source && pick(40) {
			for j := range n {
				if pick(80) {
					opts = append(opts, checktest.Failing(fmt.Sprintf("node-%d", j), v1beta1.PathMTU, 1500))
				}
			}
		}
		reports = append(reports, checktest.PathReport(name, opts...))
	}
	return checktest.Health(reports...)
}

var (
	randomTaints = []corev1.Taint{
		{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Value: "x", Effect: corev1.TaintEffectNoExecute},
		{Key: "b", Value: "y", Effect: corev1.TaintEffectNoSchedule}, {Key: "c", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	randomTolerations = []corev1.Toleration{
		{Key: "a", Operator: corev1.TolerationOpExists}, {Key: "b", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute},
		{Key: "b", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, {Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	operators = []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt}
)

// TestValidRequirement holds the regex-free check to apimachinery's validation, which the
// scheduler's selector parsing uses. Fault caught: a value the selector refuses taken for a label
// (a NotIn on it would then match every node in the index, and none in the scheduler).
func TestValidRequirement(t *testing.T) {
	cases := []string{"", "a", "A-b_c.d", "-a", "a-", "_a", "a.", "a b", "a/b", "example.com/a", "Example.com/a", "example.com/", "/a",
		"a.-b.com/x", "a..b/x", "x" + strings.Repeat("y", 62), "x" + strings.Repeat("y", 63), strings.Repeat("a", 63) + ".com/x", "é", "a!"}
	for _, key := range cases {
		for _, value := range cases {
			if strings.Contains(value, "/") {
				continue
			}
			r := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
			want := len(validation.IsQualifiedName(key)) == 0 && len(validation.IsValidLabelValue(value)) == 0
			if got := validRequirement(&r); got != want {
				t.Errorf("key %q value %q: valid %v, apimachinery says %v", key, value, got, want)
			}
		}
	}
}

// searchKeeping is search listing every unverified target, as Steer runs it.
func searchKeeping(in *CreateInput) feasibility {
	t, conflict := newTarget(in)
	if conflict != "" {
		return feasibility{fld: fieldAddedNodeSelector, msg: conflict}
	}
	return searchTarget(in, t, true)
}
