package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// vmimToYAML is a migration of vmi whose spec.addedNodeSelector pins the target to node.
func vmimToYAML(ns, name, vmi, node string) string {
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {vmiName: %s, addedNodeSelector: {kubernetes.io/hostname: %s}}\n", name, ns, vmi, node)
}

// dryRun creates yaml with --dry-run=server and returns stderr and the error.
func dryRun(yaml string) (string, error) {
	_, stderr, err := f.Kubectl(yaml, "create", "--dry-run=server", "-f", "-")
	return stderr, err
}

// net1500 is a migration network of MTU 1500 on the nodes' default 1500 uplinks.
const net1500 = `{"clusterNetwork":"migration","range":"10.78.0.0/24","mtu":1500}`

// reports returns the PathReports by node.
func reports(ctx context.Context, g Gomega) map[string]v1beta1.PathReport {
	var l v1beta1.PathReportList
	g.Expect(f.Client.List(ctx, &l)).To(Succeed())
	out := map[string]v1beta1.PathReport{}
	for _, r := range l.Items {
		out[r.Name] = r
	}
	return out
}

// failingOf words a report's failing peers "peer:reason:largest", sorted as the report keeps them.
func failingOf(r v1beta1.PathReport) []string {
	var out []string
	for _, p := range r.Failing {
		out = append(out, fmt.Sprintf("%s:%s:%d", p.Node, p.Reason, p.Largest))
	}
	return out
}

func setUplinkMTU(ctx context.Context, node string, mtu int) {
	n := &corev1.Node{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[cluster.UplinkMTUAnnotationPrefix+"migration"] = fmt.Sprint(mtu)
	ExpectWithOffset(1, f.Client.Patch(ctx, n, patch)).To(Succeed())
}

var _ = Describe("migration-network health from the real probe agents", func() {
	BeforeEach(requireProbedNetworks)

	// Faults caught: an agent that does not probe from virt-handler's migration0 (no address, no
	// report), one that judges paths by small packets only (node-3's narrowed uplink passes), a
	// report that keeps a failure after the repair; in admission, a target behind a failing path
	// admitted (the MTU problem found at migration time instead), feasibleTarget's "no node can
	// receive" in place of the pair and its reason, stale results refusing a migration (missing
	// health data must never block), a repaired path still refused.
	It("reports a narrowed uplink's pairs within a round, refuses migrations through them, and clears them after the repair", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		sc := newScraper(ctx)
		start := time.Now()
		cond := func(ctx context.Context) string { c, _ := healthy(ctx); return c }
		paths := func(ctx context.Context) *v1beta1.PathsStatus { _, p := healthy(ctx); return p }
		metrics := func(g Gomega) map[string]float64 {
			m, err := sc.scrape(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			return m
		}
		// Its events must not fall to the recorder's per-object budget spent by earlier specs.
		freshEventBudget(ctx)
		setValue(ctx, net1500)
		waitReady(ctx, netcontroller.ReasonReady)
		network := settings.DefaultKubeVirtNamespace + "/" + setting(ctx).Status.AppliedNetwork
		nodes := []string{"node-1", "node-2", "node-3"}
		Eventually(func(g Gomega) {
			rs := reports(ctx, g)
			for _, n := range nodes {
				r := rs[n]
				g.Expect(r.Network).To(Equal(network), n)
				g.Expect(r.Problem).To(BeEmpty(), "%s: %s", n, r.Message)
				g.Expect(r.MTU).To(BeEquivalentTo(1500), n)
				g.Expect(r.LastRound).NotTo(BeNil(), n)
				g.Expect(r.LastRound.Peers).To(BeEquivalentTo(len(nodes)-1), n)
				g.Expect(r.Failing).To(BeEmpty(), n)
				g.Expect(r.OwnerReferences).To(ContainElement(HaveField("Name", n)), "owned by its Node")
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		By("every pair verified: Healthy True")
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		Eventually(paths).WithContext(ctx).WithTimeout(framework.Long).Should(HaveValue(And(
			HaveField("Pairs", int32(3)), HaveField("Verified", int32(3)), HaveField("Failing", BeZero()))))

		setUplinkMTU(ctx, "node-3", 1400)
		DeferCleanup(setUplinkMTU, "node-3", 1500)
		Eventually(func(g Gomega) {
			rs := reports(ctx, g)
			g.Expect(failingOf(rs["node-1"])).To(Equal([]string{"node-3:MTU:1400"}))
			g.Expect(failingOf(rs["node-2"])).To(Equal([]string{"node-3:MTU:1400"}))
			g.Expect(failingOf(rs["node-3"])).To(Equal([]string{"node-1:MTU:1400", "node-2:MTU:1400"}))
			g.Expect(rs["node-1"].Failing[0].Message).To(ContainSubstring("1500-byte frames from node-1 to node-3 do not arrive (largest that crossed: 1400)"))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed(), "within a round or two (4 s each here)")
		By("the setting's status, the gauges and an event name node-3's pairs")
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(And(
			HavePrefix("False/"+netcontroller.ReasonPathsFailing+": "), ContainSubstring("node-3")))
		Eventually(paths).WithContext(ctx).WithTimeout(framework.Long).Should(HaveValue(And(HaveField("Failing", int32(2)), HaveField("Verified", int32(1)),
			HaveField("Failures", ContainElement(And(HaveField("From", "node-1"), HaveField("To", "node-3"), HaveField("Reason", v1beta1.PathMTU),
				HaveField("Message", ContainSubstring("largest that crossed: 1400"))))))))
		Eventually(func(g Gomega) {
			m := metrics(g)
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPaths, "state", "failing"), 2.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPathsFailing, "reason", v1beta1.PathMTU), 4.0))
			g.Expect(m).To(HaveKey(netcontroller.MetricProbeRound))
		}).WithTimeout(framework.Long).Should(Succeed())
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Long).Should(ContainElement(And(
			HavePrefix("Warning "+netcontroller.ReasonPathsFailing+": "), ContainSubstring("node-3"))))

		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())
		By("the only target asked for, node-3, sits behind a failing path from node-1: refused, naming the pair")
		Eventually(func(g Gomega) {
			stderr, err := dryRun(vmimToYAML(ns, "to-3", "vm-a", "node-3"))
			g.Expect(err).To(HaveOccurred())
			g.Expect(stderr).To(ContainSubstring("migranet pathHealthy: no target with a healthy migration path from node-1: node-3: " +
				"1500-byte frames from node-1 to node-3 do not arrive (largest that crossed: 1400); check the uplink MTU of both nodes"))
			g.Expect(stderr).NotTo(ContainSubstring("feasibleTarget"))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		By("with a healthy target left it is admitted, warning that node-3 is excluded from the targets")
		stderr, err := dryRun(vmimYAML(ns, "anywhere", "vm-a"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning: migranet pathHealthy: node-3 excluded from the targets: the migration path from node-1 fails " +
			"(node-3: 1500-byte frames from node-1 to node-3 do not arrive (largest that crossed: 1400)"))
		stderr, err = dryRun(vmimToYAML(ns, "to-2", "vm-a", "node-2"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(BeEmpty(), "pinned to the healthy node-2: nothing to warn about")

		By("node-2's agent is down: silent once its results go stale, and a migration to it is admitted with a warning")
		Expect(f.ProbeAgents.Hold(ctx, "node-2", true)).To(Succeed())
		DeferCleanup(f.ProbeAgents.Hold, "node-2", false)
		Eventually(func(g Gomega) {
			stderr, err := dryRun(vmimToYAML(ns, "to-2", "vm-a", "node-2"))
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stderr).To(ContainSubstring("Warning: migranet pathHealthy: admitted with 1 target whose migration path from node-1 is unverified: node-2: node-2's probe agent is silent (AgentSilent)"))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		Expect(cond(ctx)).To(HavePrefix("False/"+netcontroller.ReasonPathsFailing), "node-3's pairs still fail")
		Expect(f.ProbeAgents.Hold(ctx, "node-2", false)).To(Succeed())

		setUplinkMTU(ctx, "node-3", 1500)
		Eventually(func(g Gomega) {
			rs := reports(ctx, g)
			for _, n := range nodes {
				g.Expect(rs[n].Failing).To(BeEmpty(), n)
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		By("repaired: Healthy True again, and the migration to node-3 is admitted again")
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Long).Should(ContainElement(
			HavePrefix("Normal " + netcontroller.ReasonPathsHealthy + ": ")))
		Eventually(func(g Gomega) {
			stderr, err := dryRun(vmimToYAML(ns, "to-3", "vm-a", "node-3"))
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stderr).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	})

	// Fault caught: a PathReport writable by anyone with RBAC on it (an agent, or a compromised
	// node, could clear another node's failures and let migrations through a broken path).
	It("lets only the node's own agent write its report", func(ctx context.Context) {
		Eventually(func(g Gomega) { g.Expect(reports(ctx, g)).To(HaveKey("node-1")) }).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		var err error
		Eventually(func(g Gomega) { // the agent replaces it every round: retry a conflict
			r := &v1beta1.PathReport{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-1"}, r)).To(Succeed())
			r.Failing = nil
			err = f.Client.Update(ctx, r) // as the suite's admin: no node
			g.Expect(apierrors.IsConflict(err)).To(BeFalse(), "%v", err)
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("PathReport node-1 is written only by the probe agent on node node-1"))
		Expect(strings.ToLower(err.Error())).To(ContainSubstring("has no node"))
	})
})
