package integration

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// pathReport is node's report on network as its probe agent writes it: probing for an hour, its
// last round just completed (fresh for three 10-minute intervals), failing the given peers.
func pathReport(node, network string, failing ...v1beta1.PeerPath) *v1beta1.PathReport {
	now := time.Now()
	return &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, Network: network, Address: "192.168.100.10", Port: 4790,
		MTU: 1500, IntervalSeconds: 600, Since: metav1.NewMicroTime(now.Add(-time.Hour)),
		LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-2 * time.Second)), Completed: metav1.NewMicroTime(now),
			Peers: 2, Failing: int32(len(failing))},
		Failing: failing}
}

var _ = Describe("migration paths (rule pathHealthy)", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Faults caught: a target behind a failing path admitted (the MTU problem found at migration
	// time instead); feasibleTarget's "no node can receive" in place of the pair and its reason;
	// results gone stale refusing the migration (missing health data must never block); a repaired
	// path still refused (health not rebuilt from the reports).
	It("refuses a target behind a failing path with the pair and the reason, warns about stale results, admits once repaired", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		network := settings.PathNetwork(cluster.KubeVirtNamespace, expectedNAD(net24))
		mtu := v1beta1.PeerPath{Node: "node-3", Address: "192.168.100.12", Reason: v1beta1.PathMTU, Largest: 1472}
		reports := []*v1beta1.PathReport{pathReport("node-1", network, mtu), pathReport("node-2", network), pathReport("node-3", network)}
		for _, r := range reports {
			Expect(f.Client.Create(ctx, r)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, r))).To(Succeed()) })
		}
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())

		By("the only feasible target, node-3, has a failing path from node-1: refused, naming the pair")
		Eventually(func(g Gomega) {
			_, stderr, err := f.Kubectl(vmimToYAML(ns, "to-3", "vm-a", "node-3"), "create", "--dry-run=server", "-f", "-")
			g.Expect(err).To(HaveOccurred())
			g.Expect(stderr).To(ContainSubstring("migranet pathHealthy: no target with a healthy migration path from node-1: node-3: " +
				"1500-byte frames from node-1 to node-3 do not arrive (largest that crossed: 1472); check the uplink MTU of both nodes"))
			g.Expect(stderr).NotTo(ContainSubstring("feasibleTarget"))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())

		By("a healthy target is admitted, without a warning")
		stdout, stderr, err := f.Kubectl(vmimToYAML(ns, "to-2", "vm-a", "node-2"), "create", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(BeEmpty())
		Expect(stdout).To(ContainSubstring("created (server dry run)"))

		By("node-2's results go stale: admitted with a warning that names it")
		stale := &v1beta1.PathReport{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-2"}, stale)).To(Succeed())
		old := metav1.NewMicroTime(time.Now().Add(-2 * time.Hour))
		stale.LastRound.Started, stale.LastRound.Completed = old, old
		Expect(f.Client.Update(ctx, stale)).To(Succeed())
		Eventually(func(g Gomega) {
			_, stderr, err := f.Kubectl(vmimToYAML(ns, "to-2", "vm-a", "node-2"), "create", "--dry-run=server", "-f", "-")
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stderr).To(ContainSubstring("Warning: migranet pathHealthy: admitted with 1 target whose migration path from node-1 is unverified: " +
				"node-2: node-2's probe results are stale"))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())

		By("node-1's report no longer lists node-3: admitted again")
		repaired := &v1beta1.PathReport{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-1"}, repaired)).To(Succeed())
		repaired.Failing, repaired.LastRound.Failing = nil, 0
		Expect(f.Client.Update(ctx, repaired)).To(Succeed())
		Eventually(func(g Gomega) {
			_, stderr, err := f.Kubectl(vmimToYAML(ns, "to-3", "vm-a", "node-3"), "create", "--dry-run=server", "-f", "-")
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stderr).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
	})
})
