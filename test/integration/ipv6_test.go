package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

const (
	// net64 is the IPv6 value: a /64 less its first interior address, 2^64-3 usable.
	net64 = `{"clusterNetwork":"migration","vlan":100,"range":"fd00:10:77::/64","exclude":["fd00:10:77::1/128"]}`
	// net125 has 4 usable IPv6 addresses (::2-::5 of fd00:10:78::/125): 3 nodes + 1.
	net125 = `{"clusterNetwork":"migration","range":"fd00:10:78::/125","exclude":["fd00:10:78::1","fd00:10:78::6"]}`
	// usable64 is 2^64 - 2 (network and last address) - 1 (the exclude), written by hand.
	usable64 = "18446744073709551613"
)

// expectIPv6Nodes expects every node of the setting's status attached with a distinct address of
// rng, the one its virt-handler's network-status reports, beside an IPv4 pod IP.
func expectIPv6Nodes(ctx context.Context, rng netip.Prefix) {
	GinkgoHelper()
	s := setting(ctx)
	Expect(s.Status.Nodes).To(HaveLen(3))
	byNode := map[string]string{}
	for _, p := range virtHandlers(ctx) {
		if p.DeletionTimestamp == nil {
			byNode[p.Spec.NodeName] = migrationIP(&p).String()
			pod, err := netip.ParseAddr(p.Status.PodIP)
			Expect(err).NotTo(HaveOccurred(), "%s: pod IP %q", p.Name, p.Status.PodIP)
			Expect(pod.Is4()).To(BeTrue(), "%s: the pod network is IPv4 here (%s)", p.Name, pod)
		}
	}
	seen := map[string]bool{}
	for _, n := range s.Status.Nodes {
		Expect(n.Reason).To(BeEmpty(), n.Name)
		ip, err := netip.ParseAddr(n.IP)
		Expect(err).NotTo(HaveOccurred(), "%s: %q", n.Name, n.IP)
		Expect(ip.Is6() && rng.Contains(ip)).To(BeTrue(), "%s: %s in %s", n.Name, ip, rng)
		Expect(n.IP).To(Equal(byNode[n.Name]), "%s: the status names its virt-handler's migration0 address", n.Name)
		Expect(seen).NotTo(HaveKey(n.IP), "addresses are distinct")
		seen[n.IP] = true
	}
}

// refusedStatusEvents are the StatusWriteFailed events recorded on the setting since start.
func refusedStatusEvents(ctx context.Context, since time.Time) []string {
	var out []string
	for _, e := range settingEvents(ctx, since) {
		if strings.Contains(e, netcontroller.ReasonStatusWriteFailed) {
			out = append(out, e)
		}
	}
	return out
}

// invalidStatusEvents are those of refusedStatusEvents whose write the API server refused as
// invalid: what a count sent as a JSON number gets ("... is invalid: status.capacity.usable ...
// must be of type string"). A write that failed for another cause is left out: an earlier spec's
// refused or interrupted writes leave an aggregated event whose time can fall within start's
// second (a clean-clone CI run counted one).
func invalidStatusEvents(ctx context.Context, since time.Time) []string {
	var out []string
	for _, e := range refusedStatusEvents(ctx, since) {
		if strings.Contains(e, " is invalid") || strings.Contains(e, "must be of type") {
			out = append(out, e)
		}
	}
	return out
}

// Every spec here fails when a count travels as a JSON number through float64 (the status write is
// then refused by the API server, Ready stays at the previous generation and the nodes stay
// empty), and each names what else it catches.
var _ = Describe("an IPv6 migration network (a /64) beside the IPv4 pod network", Ordered, func() {
	rng := netip.MustParsePrefix("fd00:10:77::/64")
	var start time.Time
	BeforeAll(func(ctx context.Context) {
		start = time.Now()
		setValue(ctx, net64)
		waitReady(ctx, netcontroller.ReasonReady)
	})
	AfterAll(func(ctx context.Context) { resetToPodNetwork(ctx) })

	// Catches: an IPv6 range rendered wrongly into the NAD; the observer not reading an IPv6
	// migration0 address, or taking the pod IP; the network controller's status write refused.
	It("renders the NAD, points KubeVirt at it and is Ready at the current generation with an IPv6 address per node", func(ctx context.Context) {
		nadName := expectedNAD(net64)
		Expect(managedNADs(ctx)).To(Equal([]string{nadName}))
		Expect(kubeVirtNetwork(ctx)).To(Equal(nadName))
		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: nadName}, nad)).To(Succeed())
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,` +
			`"ipam":{"type":"whereabouts","range":"fd00:10:77::/64","exclude":["fd00:10:77::1/128"]}}`))
		Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
		Expect(setting(ctx).Status.AppliedNetwork).To(Equal(nadName))
		expectIPv6Nodes(ctx, rng)
		Expect(invalidStatusEvents(ctx, start)).To(BeEmpty())
	})

	// Catches: a count clamped to an int64 or rounded through a float64; the capacity written as
	// a JSON number; the low-capacity threshold overflowing (free*10 in an int64 calls a nearly
	// empty /64 low); a gauge claiming exactness it does not have.
	It("counts the /64's addresses exactly in the status, in kubectl get -o wide and honestly in the gauges", func(ctx context.Context) {
		Eventually(func() *v1beta1.IPCapacity { return setting(ctx).Status.Capacity }).WithContext(ctx).WithTimeout(framework.Short).
			Should(Equal(&v1beta1.IPCapacity{Usable: usable64, Used: "3", Free: "18446744073709551610", Summary: "3/2^64-3"}))
		Expect(condition(ctx, v1beta1.ConditionIPCapacity)).To(Equal("True/" + netcontroller.ReasonSufficient))

		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("Setting"))
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, u)).To(Succeed())
		usable, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "capacity", "usable")
		Expect(usable).To(Equal(usable64), "stored as a string of decimal digits")

		out, stderr, err := f.Kubectl("", "get", "settings.migranet.io", v1beta1.MigrationNetwork, "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(And(ContainSubstring("IPS USED"), ContainSubstring("3/2^64-3")))

		sc := newScraper(ctx)
		Eventually(func(g Gomega) {
			m, err := sc.scrape(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricAddresses, "kind", "usable"), 0x1p64), "2^64-3, rounded once")
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricAddresses, "kind", "used"), 3.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricAddressesExact), 0.0), "the gauges say they are rounded")
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
	})

	// Catches: migranet status reading the counts as int64 or printing 20 digits; nodes 0/0 from
	// a status that was never written.
	It("shows nodes 3/3 attached and the capacity in short in migranet status, exactly in its JSON", func(ctx context.Context) {
		code, out, stderr := migranetStatus(ctx, "-n", "default")
		Expect(code).To(Equal(0), stderr)
		Expect(out).To(ContainSubstring(expectedNAD(net64) + " (migration vlan 100 fd00:10:77::/64 (-1)): Ready, nodes 3/3 attached, IPs 3/2^64-3 used"))
		code, out, stderr = migranetStatus(ctx, "-n", "default", "-o", "json")
		Expect(code).To(Equal(0), stderr)
		var doc struct {
			Network struct {
				NodesAttached int         `json:"nodesAttached"`
				IPsUsable     json.Number `json:"ipsUsable"`
			} `json:"network"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(out)))
		dec.UseNumber()
		Expect(dec.Decode(&doc)).To(Succeed(), out)
		Expect(doc.Network.NodesAttached).To(Equal(3))
		Expect(doc.Network.IPsUsable.String()).To(Equal(usable64))
	})

	// Catches: networkReady judging an IPv6 network not ready; preflight disagreeing with the webhook.
	It("admits a migration, and preflight agrees rule by rule", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		Expect(f.Client.Create(ctx, framework.VMI(ns, "v6", "node-1", nil))).To(Succeed())
		Eventually(func(g Gomega) {
			p := migranetPreflight(ctx, "-n", ns, "v6")
			g.Expect(p.Admitted).To(BeTrue(), "%+v", p.Rules)
			g.Expect(p.Rules).To(ContainElement(And(
				HaveField("Rule", settings.RuleNetworkReady), HaveField("Verdict", migrationcheck.VerdictPass))))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		f.CreateVMIM(ctx, framework.VMIM(ns, "move-v6", "v6", nil))
	})

	// Catches: the guard's parameter or policies missing an IPv6 network's NAD.
	It("keeps every other workload off the IPv6 NAD", func(ctx context.Context) {
		nad := expectedNAD(net64)
		Expect(strings.Fields(guardNames(ctx))).To(ContainElement(nad))
		ns := f.Namespace(ctx)
		expectGuardRefusal(f.Client.Create(ctx, guardPod(ns, "web", map[string]string{"k8s.v1.cni.cncf.io/networks": cluster.KubeVirtNamespace + "/" + nad})), nad)
		expectGuardRefusal(f.Client.Create(ctx, multusVMI(ns, "vm", cluster.KubeVirtNamespace+"/"+nad)), nad)
	})

	// Catches: the pool of an IPv6 range looked up under another name (its leaked allocations never
	// released), or offsets of a /64 mishandled.
	It("finds the range's IPPool by its IPv6 name and releases a force-deleted virt-handler's allocation", func(ctx context.Context) {
		const poolName = "fd00-10-77---64"
		// Every live virt-handler's address and nothing else, read again on each try.
		Eventually(func(g Gomega) {
			want := virtHandlerAllocations(ctx, g, rng)
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).To(Equal(want))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())

		victim := virtHandlers(ctx)[0]
		By("force-deleting " + victim.Name + " (" + migrationIP(&victim).String() + ")")
		Expect(f.Client.Delete(ctx, &victim, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).NotTo(ContainElement(cluster.KubeVirtNamespace+"/"+victim.Name), "the leaked allocation is released")
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
			g.Expect(setting(ctx).Status.Nodes).To(HaveEach(HaveField("Reason", "")))
			g.Expect(podRefs(allocs)).To(Equal(virtHandlerAllocations(ctx, g, rng)))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		expectIPv6Nodes(ctx, rng)
		Expect(invalidStatusEvents(ctx, start)).To(BeEmpty(), "no status write was refused as invalid")
	})
})

// Catches: IPCapacity judged in int64 or float64 for an IPv6 range (a small one must still turn
// low), and the excludes of an IPv6 range not honoured by the count.
var _ = Describe("a small IPv6 migration network", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })
	It("turns IPCapacity low when one address is left", func(ctx context.Context) {
		setValue(ctx, net125)
		waitReady(ctx, netcontroller.ReasonReady)
		expectIPv6Nodes(ctx, netip.MustParsePrefix("fd00:10:78::/125"))
		for _, n := range setting(ctx).Status.Nodes {
			Expect(n.IP).NotTo(BeElementOf("fd00:10:78::1", "fd00:10:78::6"), "excluded")
		}
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionIPCapacity).
			WithTimeout(framework.Short).Should(Equal("False/" + netcontroller.ReasonLowCapacity))
		Expect(setting(ctx).Status.Capacity).To(Equal(&v1beta1.IPCapacity{Usable: "4", Used: "3", Free: "1", Summary: "3/4"}))
	})
})
