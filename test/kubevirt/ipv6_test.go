package kubevirt

import (
	"context"
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// net64 is an IPv6 /64 migration network beside the IPv4 pod network (dual stack as most run it).
const net64 = `{"clusterNetwork":"migration","vlan":100,"range":"fd00:10:77::/64","exclude":["fd00:10:77::1/128"]}`

var _ = Describe("an IPv6 migration network with KubeVirt's migration controller", func() {
	BeforeEach(func() { DeferCleanup(resetSettings) })

	// Catches: an IPv6 network never reported Ready (the status write refused over its counts),
	// so migranet refuses the migration; the target advertising its IPv4 pod IP instead of its
	// IPv6 migration0 address; migranet publishing another address than the one KubeVirt uses.
	It("migrates to Succeeded with the target's IPv6 migration0 address, the one migranet publishes", func(ctx context.Context) {
		f.SetSetting(ctx, v1beta1.MigrationNetwork, net64)
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "v6vm", "node-2", nil))
		_, stderr, err := f.Kubectl(vmimYAML(ns, "move-v6", "v6vm"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "move-v6").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))

		ms := vmi(ctx, ns, "v6vm").Status.MigrationState
		addr, err := netip.ParseAddr(ms.TargetNodeAddress)
		Expect(err).NotTo(HaveOccurred())
		Expect(addr.Is6() && netip.MustParsePrefix("fd00:10:77::/64").Contains(addr)).To(BeTrue(), "%s: IPv6, inside the setting's range", addr)
		s := &v1beta1.Setting{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
		published := map[string]string{}
		for _, n := range s.Status.Nodes {
			published[n.Name] = n.IP
		}
		Expect(ms.TargetNodeAddress).To(Equal(published[ms.TargetNode]), "the address migranet publishes for the target node")
		pod, err := netip.ParseAddr(virtHandlerOn(ctx, ms.TargetNode).Status.PodIP)
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Is4()).To(BeTrue(), "the pod network is IPv4 (%s)", pod)
	})
})
