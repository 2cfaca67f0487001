package integration

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// nodesOf returns the sorted nodes of the pods in namespace ns with label key=value that are not
// being deleted.
func nodesOf(ctx context.Context, g Gomega, ns, key, value string) []string {
	pods := &corev1.PodList{}
	g.Expect(f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{key: value})).To(Succeed())
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			out = append(out, p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

// patchNodeLabel sets label key=value on node and removes it when the spec ends.
func patchNodeLabel(ctx context.Context, node, key, value string) {
	GinkgoHelper()
	edit := func(ctx context.Context, fn func(*corev1.Node)) {
		n := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		fn(n)
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
	}
	edit(ctx, func(n *corev1.Node) { n.Labels[key] = value })
	DeferCleanup(edit, func(n *corev1.Node) { delete(n.Labels, key) })
}

// setWorkloadsPlacement sets the KubeVirt CR's spec.workloads.nodePlacement (nil: none).
func setWorkloadsPlacement(ctx context.Context, np *kubevirtv1.NodePlacement) {
	GinkgoHelper()
	kv, err := f.KubeVirt(ctx)
	Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(kv.DeepCopy())
	kv.Spec.Workloads = nil
	if np != nil {
		kv.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: np}
	}
	Expect(f.Client.Patch(ctx, kv, patch)).To(Succeed())
}

// Faults caught: a probe DaemonSet that ignores KubeVirt's workloads placement (an agent on a
// node virt-handler may not run on, reporting NoVirtHandler; or none where virt-handler runs),
// and an upgrade by re-apply that takes the placement away again.
var _ = Describe("the probe agent's placement", func() {
	const label = "placement.test.migranet.io/virt"
	probeNS := netcontroller.DefaultProbeNamespace
	agentsOn := func(ctx context.Context, g Gomega) []string {
		return nodesOf(ctx, g, probeNS, sim.ProbeAgentLabel, sim.ProbeAgentValue)
	}
	handlersOn := func(ctx context.Context, g Gomega) []string {
		return nodesOf(ctx, g, cluster.KubeVirtNamespace, sim.VirtHandlerLabel, sim.VirtHandlerName)
	}
	template := func(ctx context.Context, g Gomega) corev1.PodSpec {
		ds := &appsv1.DaemonSet{}
		g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: probeNS, Name: netcontroller.ProbeDaemonSet}, ds)).To(Succeed())
		return ds.Spec.Template.Spec
	}

	It("follows KubeVirt's workloads nodePlacement, as virt-handler does, also after the manifests are applied again", func(ctx context.Context) {
		all := []string{"node-1", "node-2", "node-3"}
		By("KubeVirt's default: Linux nodes, virt-handler's own toleration")
		Eventually(func(g Gomega) {
			spec := template(ctx, g)
			g.Expect(spec.NodeSelector).To(Equal(map[string]string{corev1.LabelOSStable: "linux"}))
			g.Expect(spec.Tolerations).To(Equal([]corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}))
			g.Expect(agentsOn(ctx, g)).To(Equal(all))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())

		By("workloads on node-1 and node-2 only: the agents leave node-3 with virt-handler")
		for _, n := range []string{"node-1", "node-2"} {
			patchNodeLabel(ctx, n, label, "yes")
		}
		DeferCleanup(func(ctx context.Context) {
			setWorkloadsPlacement(ctx, nil)
			Eventually(func(g Gomega) {
				g.Expect(agentsOn(ctx, g)).To(Equal(all))
				g.Expect(handlersOn(ctx, g)).To(Equal(all))
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
		})
		setWorkloadsPlacement(ctx, &kubevirtv1.NodePlacement{NodeSelector: map[string]string{label: "yes"}})
		Eventually(func(g Gomega) {
			g.Expect(template(ctx, g).NodeSelector).To(Equal(map[string]string{corev1.LabelOSStable: "linux", label: "yes"}))
			g.Expect(handlersOn(ctx, g)).To(Equal([]string{"node-1", "node-2"}))
			g.Expect(agentsOn(ctx, g)).To(Equal([]string{"node-1", "node-2"}))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())

		By("the manifests applied again, as an upgrade does: the placement stays")
		Expect(f.Reinstall(ctx)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(template(ctx, g).NodeSelector).To(HaveKeyWithValue(label, "yes"))
		}).WithContext(ctx).WithTimeout(framework.Short / 2).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(agentsOn(ctx, g)).To(Equal([]string{"node-1", "node-2"})) }).
			WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	})
})
