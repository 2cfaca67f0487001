package integration

import (
	"context"
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/nodenet"
)

// steeredOff creates, as a server-side dry run, the target pod virt-controller would create for a
// migration of vmi and returns the nodes its required node affinity excludes (matchFields
// metadata.name NotIn), as the steering webhook returned it.
func steeredOff(ctx context.Context, ns, vmi string) ([]string, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "virt-launcher-" + vmi + "-",
		Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "dry-run"},
		Annotations: map[string]string{kubevirtv1.DomainAnnotation: vmi}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "none"}}}}
	if err := f.Client.Create(ctx, pod, client.DryRunAll); err != nil {
		return nil, err
	}
	var out []string
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range t.MatchFields {
				if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpNotIn {
					out = append(out, r.Values...)
				}
			}
		}
	}
	return out, nil
}

// pathFault breaks node-3's paths in the nodes' real networks and returns its repair.
type pathFault func(ctx context.Context, node1 netip.Addr) (repair func(context.Context) error)

// The faults besides a narrowed uplink (probeagents_test.go), each through the real probe agents
// and admission: the pairs reported with their reason within a round or two, the migration from
// node-1 to node-3 refused naming the pair, one to the healthy node-2 admitted without a warning,
// and node-3 admitted again after the repair; a target pod of vm-a steered off node-3 while the
// fault lasts and not after the repair (a path repaired receives migrations again).
//
// Faults caught: an agent that reads a dead path as healthy (a report that keeps its last good
// verdict, probes judged by the socket's send result), a one-way cut reported as healthy from the
// side whose probes still arrive, the pathHealthy rule ignoring Unreachable or OneWay, a repaired
// path still refused. Each was seen to fail this table by turning the agent's verdicts off
// (every probe counted as answered).
var _ = Describe("migration-path faults seen by the real probe agents", func() {
	BeforeEach(requireProbedNetworks)

	DescribeTable("reports the pairs, refuses migrations through them, admits them again after the repair",
		func(ctx context.Context, value string, fault pathFault, node1, node2, node3 []string, reason string) {
			ns := f.Namespace(ctx)
			setValue(ctx, value)
			waitReady(ctx, netcontroller.ReasonReady)
			var addr1 netip.Addr
			Eventually(func(g Gomega) {
				a, err := netip.ParseAddr(reports(ctx, g)["node-1"].Address)
				g.Expect(err).NotTo(HaveOccurred())
				addr1 = a
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())

			repair := fault(ctx, addr1)
			repaired := false
			DeferCleanup(func(ctx context.Context) {
				if !repaired {
					Expect(repair(ctx)).To(Succeed())
				}
			})
			Eventually(func(g Gomega) {
				rs := reports(ctx, g)
				g.Expect(failingOf(rs["node-1"])).To(Equal(node1), "node-1")
				g.Expect(failingOf(rs["node-2"])).To(Equal(node2), "node-2")
				g.Expect(failingOf(rs["node-3"])).To(Equal(node3), "node-3")
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed(), "within a round or two (4 s each here)")
			Eventually(func(ctx context.Context) string { c, _ := healthy(ctx); return c }).WithContext(ctx).
				WithTimeout(framework.Long).Should(And(HavePrefix("False/"+netcontroller.ReasonPathsFailing+": "), ContainSubstring("node-3")))

			By("node-3 refused from node-1, naming the pair; node-2 admitted")
			Eventually(func(g Gomega) {
				stderr, err := dryRun(vmimToYAML(ns, "to-3", "vm-a", "node-3"))
				g.Expect(err).To(HaveOccurred())
				g.Expect(stderr).To(And(
					ContainSubstring("migranet pathHealthy: no target with a healthy migration path from node-1: node-3: "),
					ContainSubstring(reason)))
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			stderr, err := dryRun(vmimToYAML(ns, "to-2", "vm-a", "node-2"))
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stderr).To(BeEmpty())
			By("a target pod of vm-a, as virt-controller would create it, steered off node-3 (server-side dry run)")
			Eventually(steeredOff).WithContext(ctx).WithArguments(ns, "vm-a").WithTimeout(framework.Long).Should(ConsistOf("node-3"))

			By("repaired: no failing pair, Healthy True, node-3 admitted again")
			Expect(repair(ctx)).To(Succeed())
			repaired = true
			Eventually(func(g Gomega) {
				rs := reports(ctx, g)
				for _, n := range []string{"node-1", "node-2", "node-3"} {
					g.Expect(rs[n].Failing).To(BeEmpty(), n)
				}
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			Eventually(func(ctx context.Context) string { c, _ := healthy(ctx); return c }).WithContext(ctx).
				WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
			Eventually(func(g Gomega) {
				stderr, err := dryRun(vmimToYAML(ns, "to-3", "vm-a", "node-3"))
				g.Expect(err).NotTo(HaveOccurred(), stderr)
				g.Expect(stderr).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			Eventually(steeredOff).WithContext(ctx).WithArguments(ns, "vm-a").WithTimeout(framework.Long).Should(BeEmpty(), "node-3 a target again")
		},
		Entry("node-3 cut off: its uplink's carrier down", net1500,
			pathFault(func(ctx context.Context, _ netip.Addr) func(context.Context) error {
				Expect(f.NodeNetworks.Fabric.SetCarrier(ctx, "node-3", "migration", false)).To(Succeed())
				return func(ctx context.Context) error {
					return f.NodeNetworks.Fabric.SetCarrier(ctx, "node-3", "migration", true)
				}
			}),
			[]string{"node-3:" + v1beta1.PathUnreachable + ":0"}, []string{"node-3:" + v1beta1.PathUnreachable + ":0"},
			[]string{"node-1:" + v1beta1.PathUnreachable + ":0", "node-2:" + v1beta1.PathUnreachable + ":0"},
			"no probe from node-1 reaches node-3 and nothing comes back"),
		Entry("node-3 on another switch (its port's VLAN not trunked)", net1500,
			pathFault(func(ctx context.Context, _ netip.Addr) func(context.Context) error {
				Expect(f.NodeNetworks.Fabric.Isolate(ctx, "node-3", "migration", true)).To(Succeed())
				return func(ctx context.Context) error {
					return f.NodeNetworks.Fabric.Isolate(ctx, "node-3", "migration", false)
				}
			}),
			[]string{"node-3:" + v1beta1.PathUnreachable + ":0"}, []string{"node-3:" + v1beta1.PathUnreachable + ":0"},
			[]string{"node-1:" + v1beta1.PathUnreachable + ":0", "node-2:" + v1beta1.PathUnreachable + ":0"},
			"no probe from node-1 reaches node-3 and nothing comes back"),
		Entry("IPv6: node-3 on another switch", net64,
			pathFault(func(ctx context.Context, _ netip.Addr) func(context.Context) error {
				Expect(f.NodeNetworks.Fabric.Isolate(ctx, "node-3", "migration", true)).To(Succeed())
				return func(ctx context.Context) error {
					return f.NodeNetworks.Fabric.Isolate(ctx, "node-3", "migration", false)
				}
			}),
			[]string{"node-3:" + v1beta1.PathUnreachable + ":0"}, []string{"node-3:" + v1beta1.PathUnreachable + ":0"},
			[]string{"node-1:" + v1beta1.PathUnreachable + ":0", "node-2:" + v1beta1.PathUnreachable + ":0"},
			"no probe from node-1 reaches node-3 and nothing comes back"),
		Entry("node-3's host firewall dropping what comes from node-1 (nftables, bridge family)", net1500,
			pathFault(func(ctx context.Context, node1 netip.Addr) func(context.Context) error {
				host := f.NodeNetworks.Fabric.Host("node-3")
				Expect(nodenet.DropBridged(ctx, host, node1)).To(Succeed())
				return func(ctx context.Context) error { return nodenet.UndropBridged(ctx, host) }
			}),
			// node-1's probes are lost, node-3's arrive (their answers do not): node-1 proves it
			// OneWay by node-3's echo; node-3 sees nothing come back.
			[]string{"node-3:" + v1beta1.PathOneWay + ":0"}, nil, []string{"node-1:" + v1beta1.PathUnreachable + ":0"},
			"packets from node-1 do not reach node-3 while node-3's own probes arrive"),
	)
})
