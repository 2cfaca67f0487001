package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

var _ = Describe("a node that joins before its cluster network is set up", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Fault caught: readiness judged for the whole cluster — one node added without the
	// network.harvesterhci.io/<cn> label made the network not Ready and every migration in the
	// cluster refused ("3 of 4 virt-handlers are on the migration network"), the evacuations of a
	// node drain included. Also caught: the new node offered as a target, or its own VMIs let
	// leave over a network it is not on.
	It("stops only the migrations it is part of; the others go on, and the status names it", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		newNode := cluster.NodeObject(cluster.NodeSpec{Name: "node-new"}) // only "mgmt"
		Expect(f.Client.Create(ctx, newNode)).To(Succeed())
		// f.DeleteNodes also force-deletes the node's pods, as the pod garbage collector would some
		// time later: a virt-handler pod left terminating on the gone node holds the next
		// virt-handler roll (maxUnavailable 1) past the cleanup's wait.
		DeferCleanup(func(ctx context.Context) { f.DeleteNodes(ctx, newNode.Name) })
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("False/" + netcontroller.ReasonNodesNotAttached))
			// Its virt-handler may have an address (the bridge plugin makes a bridge without uplink).
			g.Expect(setting(ctx).Status.Nodes).To(ContainElement(And(HaveField("Name", "node-new"), HaveField("Reason", netcontroller.ReasonNoClusterNetwork))))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())

		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-new", "node-new", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-to-new", "node-1", map[string]string{"kubernetes.io/hostname": "node-new"}))).To(Succeed())
		Eventually(func() string { // the VMIs reach the webhook's caches
			_, stderr, _ := f.Kubectl(vmimYAML(ns, "between-attached", "vm-a"), "create", "--dry-run=server", "-f", "-")
			return stderr
		}).WithTimeout(framework.Short).Should(BeEmpty(), "a migration between attached nodes is admitted")

		_, stderr, err := f.Kubectl(vmimYAML(ns, "from-new", "vm-new"), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("migranet networkReady"))
		Expect(stderr).To(ContainSubstring("runs on node-new, which does not carry the cluster network migration"))

		_, stderr, err = f.Kubectl(vmimYAML(ns, "to-new", "vm-to-new"), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("migranet feasibleTarget"))
		Expect(stderr).NotTo(ContainSubstring("migranet networkReady"))
	})
})
