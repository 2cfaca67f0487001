package integration

import (
	"context"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// netMacvlan asks for a macvlan migration network over every node's lab NIC (cluster.LabNIC, MTU
// 9000 on the environment's nodes), at MTU 8000 so that an mtu left out of the NAD (migration0
// at the NIC's 9000) shows in the probe agents' reports.
const netMacvlan = `{"macvlan":{"master":"` + cluster.LabNIC + `"},"range":"10.79.0.0/24","mtu":8000}`

var _ = Describe("a macvlan migration network", func() {
	BeforeEach(requireProbedNetworks)

	// Faults caught: a macvlan value rendered as a bridge NAD (or not at all), virt-handlers not
	// attached by the real macvlan plugin (no migration0 address: not Ready), readiness asking for
	// a Harvester cluster-network label the value never named (NoClusterNetwork), probes at the
	// wrong MTU, a summary that reads like a bridge network.
	It("renders a macvlan NAD over the named NIC, attaches every virt-handler, and is Ready and Healthy at its MTU", func(ctx context.Context) {
		setValue(ctx, netMacvlan)
		waitReady(ctx, netcontroller.ReasonReady)
		s := setting(ctx)
		Expect(s.Status.Summary).To(Equal("macvlan " + cluster.LabNIC + " 10.79.0.0/24 mtu 8000"))

		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: s.Status.AppliedNetwork}, nad)).To(Succeed())
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"macvlan","master":"` + cluster.LabNIC +
			`","mode":"bridge","mtu":8000,"ipam":{"type":"whereabouts","range":"10.79.0.0/24"}}`))
		Expect(nad.Labels).To(HaveKeyWithValue(settings.LabelRole, settings.RoleMigration))

		rng := netip.MustParsePrefix("10.79.0.0/24")
		Expect(s.Status.Nodes).NotTo(BeEmpty())
		for _, n := range s.Status.Nodes {
			Expect(n.Reason).To(BeEmpty(), n.Name)
			Expect(rng.Contains(netip.MustParseAddr(n.IP))).To(BeTrue(), "%s: %s", n.Name, n.IP)
		}

		network := settings.DefaultKubeVirtNamespace + "/" + s.Status.AppliedNetwork
		Eventually(func(g Gomega) {
			rs := reports(ctx, g)
			for _, n := range s.Status.Nodes {
				r := rs[n.Name]
				g.Expect(r.Network).To(Equal(network), n.Name)
				g.Expect(r.MTU).To(BeEquivalentTo(8000), n.Name)
				g.Expect(r.Failing).To(BeEmpty(), n.Name)
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		Eventually(func(ctx context.Context) string { c, _ := healthy(ctx); return c }).WithContext(ctx).
			WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
	})
})
