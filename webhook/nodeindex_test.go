package webhook

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// TestNodeIndexAgreesWithTheWalk judges random clusters and migrations twice, with and without the
// node index, and expects the same answer every time (admission or the very same refusal).
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
			nodes[i] = node(fmt.Sprintf("node-%d", i), opts...)
		}
		in := baseCreate()
		in.Nodes = nodes
		in.VMI = vmi(fmt.Sprintf("node-%d", rng.IntN(n+1)), selector(50)) // node-n: a source that is not in the list
		in.VMIM.Spec.AddedNodeSelector = selector(50)
		if sel := selector(30); sel != nil {
			in.KubeVirt.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: sel}}
		}
		if pick(30) {
			in.CurrentHash = "" // no migration network: the cluster network does not count
		}
		_, want, _ := infeasible(&in)
		in.index = newNodeIndex(nodes)
		_, got, _ := infeasible(&in)
		if got != want {
			t.Fatalf("iteration %d: with the index %q, walking the nodes %q", iter, got, want)
		}
		if want == "" {
			feasible++
		}
	}
	if feasible < 300 || feasible > 2700 {
		t.Errorf("%d of 3000 random migrations were feasible: the generator does not exercise both answers", feasible)
	}
}
