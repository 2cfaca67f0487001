package integration

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// poolAllocations reads spec.allocations of the whereabouts IPPool name (nil when it does not exist).
func poolAllocations(ctx context.Context, name string) (map[string]sim.IPAllocation, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sim.IPPoolGVK)
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: sim.WhereaboutsNamespace, Name: name}, u); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "spec", "allocations")
	out := map[string]sim.IPAllocation{}
	for key, v := range raw {
		var a sim.IPAllocation
		m, _ := v.(map[string]any)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &a); err != nil {
			return nil, err
		}
		out[key] = a
	}
	return out, nil
}

// reservedAddrs are the addresses whereabouts' OverlappingRangeIPReservations hold (unnamed
// networks' names only), with their pods.
func reservedAddrs(ctx context.Context) (map[netip.Addr]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(netcontroller.ReservationList)
	if err := f.Client.List(ctx, list, client.InNamespace(sim.WhereaboutsNamespace)); err != nil {
		return nil, err
	}
	out := map[netip.Addr]string{}
	for _, item := range list.Items {
		if a, ok := netcontroller.ReservedAddr(item.GetName()); ok {
			out[a], _, _ = unstructured.NestedString(item.Object, "spec", "podref")
		}
	}
	return out, nil
}

// podRefs are the pods holding the allocations, by key.
func podRefs(allocs map[string]sim.IPAllocation) map[string]string {
	out := map[string]string{}
	for k, a := range allocs {
		out[k] = a.PodRef
	}
	return out
}

var _ = Describe("whereabouts allocations leaked by vanished virt-handlers", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Fault caught: migranet leaving the allocations of force-deleted virt-handlers in the pool of
	// the range in use (Harvester #9598) — whereabouts frees an address only on CNI DEL, which a
	// pod deleted with grace period 0 never gets, so the range fills up and the next virt-handler
	// cannot start. Also caught: releasing only the pool entry and leaving the address'
	// OverlappingRangeIPReservation, which the simulator keeps and consults as whereabouts does
	// (the address is then skipped for good and the range still exhausts). Also caught: releasing another namespace's allocation in the same pool, and
	// releasing the address of a virt-handler the manager's cache has not seen yet (its
	// replacement allocates while the old pod's deletion is being handled).
	It("releases them from the current pool, so replacements get addresses, and leaves another namespace's alone", func(ctx context.Context) {
		const small = smallRange
		const poolName = "10.89.0.0-29"
		rng := netip.MustParsePrefix("10.89.0.0/29")
		setValue(ctx, small)
		waitReady(ctx, netcontroller.ReasonReady)
		nad := expectedNAD(small)

		// A pod of another namespace attached the migration NAD (Multus resolves kubevirt/<nad> from
		// any namespace) and is then force-deleted: its allocation leaks too, but is not migranet's.
		ns := f.Namespace(ctx)
		tenant := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0",
				Annotations: map[string]string{sim.NetworksAnnotation: cluster.KubeVirtNamespace + "/" + nad + "@net1"}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "web"}}},
		}
		// The guard refuses such a pod today (see guard_test.go); this one predates it.
		withoutPodGuard(ctx, func() { Expect(f.Client.Create(ctx, tenant)).To(Succeed()) })
		var tenantKey string
		Eventually(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			for k, a := range allocs {
				if a.PodRef == ns+"/web-0" {
					tenantKey = k
				}
			}
			g.Expect(tenantKey).NotTo(BeEmpty(), "the tenant pod's allocation in %v", podRefs(allocs))
		}).WithTimeout(framework.Short).Should(Succeed())
		Expect(f.Client.Delete(ctx, tenant, client.GracePeriodSeconds(0))).To(Succeed())
		tenantAlloc, err := poolAllocations(ctx, poolName)
		Expect(err).NotTo(HaveOccurred())

		// 3 virt-handlers + the tenant's leak hold 4 of 5 addresses: the first force-deleted
		// virt-handler's replacement takes the last one, and without migranet's release the second
		// replacement finds the range exhausted and never becomes ready.
		for i := range 4 {
			handlers := virtHandlers(ctx)
			Expect(handlers).To(HaveLen(3))
			victim := handlers[i%3]
			ip := migrationIP(&victim)
			Expect(rng.Contains(ip)).To(BeTrue(), "%s: %s", victim.Name, ip)
			By(fmt.Sprintf("force-deleting %s (%s) on %s", victim.Name, ip, victim.Spec.NodeName))
			Expect(f.Client.Delete(ctx, &victim, client.GracePeriodSeconds(0))).To(Succeed())
			Eventually(func(g Gomega) {
				allocs, err := poolAllocations(ctx, poolName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(podRefs(allocs)).NotTo(ContainElement(cluster.KubeVirtNamespace+"/"+victim.Name), "the leaked allocation is released")
				g.Expect(allocs).To(HaveKeyWithValue(tenantKey, tenantAlloc[tenantKey]), "another namespace's allocation is left alone")
				now := virtHandlers(ctx)
				g.Expect(now).To(HaveLen(3))
				for _, p := range now {
					g.Expect(p.Name).NotTo(Equal(victim.Name))
					g.Expect(podReady(&p)).To(BeTrue(), "%s ready; virt-handlers: %s", p.Name, describeVirtHandlers(ctx))
					g.Expect(rng.Contains(migrationIP(&p))).To(BeTrue(), p.Name)
				}
				g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		}

		// What the pool holds in the end: the three live virt-handlers and the tenant's leak.
		var want map[string]string
		Eventually(func(g Gomega) {
			want = virtHandlerAllocations(ctx, g, rng)
			want[tenantKey] = ns + "/web-0"
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).To(Equal(want))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Eventually(func() *v1beta1.IPCapacity { return setting(ctx).Status.Capacity }).WithContext(ctx).
			WithTimeout(framework.Short).Should(Equal(&v1beta1.IPCapacity{Usable: "5", Used: "4", Free: "1", Summary: "4/5"}),
			"used counts the pool's allocations, the tenant's leak included")
		// What whereabouts holds is exactly that: one reservation per pool entry, none for the
		// force-deleted virt-handlers.
		reserved, err := reservedAddrs(ctx)
		Expect(err).NotTo(HaveOccurred())
		inRange := map[string]string{}
		for a, ref := range reserved {
			if rng.Contains(a) {
				inRange[sim.OffsetKey(rng, a)] = ref
			}
		}
		Expect(inRange).To(Equal(want), "the reservations of the range, by offset")
		Consistently(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(allocs).To(HaveKeyWithValue(tenantKey, tenantAlloc[tenantKey]))
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})
})

// These specs show the Multus simulator alone keeping whereabouts' state: migranet is stopped, so
// nothing but a CNI DEL releases an address.
var _ = Describe("the Multus simulator's whereabouts state, without migranet", Ordered, func() {
	const nadName = "tiny-migration"
	const poolName = "10.90.0.0-29"
	// 10.90.0.0/29 minus the network, last, and excluded addresses: .4, .5, .6 — one per node.
	rng := netip.MustParsePrefix("10.90.0.0/29")
	framework.WithoutMigranet(&f, nadName)
	BeforeAll(func(ctx context.Context) {
		Expect(f.Client.Create(ctx, &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: nadName},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br",` +
				`"ipam":{"type":"whereabouts","range":"10.90.0.0/29","exclude":["10.90.0.1/32","10.90.0.2/31"]}}`},
		})).To(Succeed())
	})

	// Fault caught: a simulator whose pool differs from whereabouts' (name, range, offset keys,
	// entry fields, lowest free offset), which would let migranet's pool handling pass here and
	// fail on a real cluster.
	It("writes the range's IPPool as whereabouts does", func(ctx context.Context) {
		f.SetKubeVirtMigrationNetwork(ctx, nadName)
		Eventually(func(g Gomega) {
			now := virtHandlers(ctx)
			g.Expect(now).To(HaveLen(3))
			for _, p := range now {
				g.Expect(p.Annotations).To(HaveKeyWithValue(sim.NetworksAnnotation, nadName+"@"+sim.MigrationInterface))
				g.Expect(podReady(&p)).To(BeTrue(), "virt-handlers: %s", describeVirtHandlers(ctx))
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(sim.IPPoolGVK)
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: poolName}, u)).To(Succeed())
		spec, _, _ := unstructured.NestedString(u.Object, "spec", "range")
		Expect(spec).To(Equal("10.90.0.0/29"))
		allocs, err := poolAllocations(ctx, poolName)
		Expect(err).NotTo(HaveOccurred())
		want := map[string]string{}
		for _, p := range virtHandlers(ctx) {
			want[sim.OffsetKey(rng, migrationIP(&p))] = cluster.KubeVirtNamespace + "/" + p.Name
		}
		Expect(podRefs(allocs)).To(Equal(want))
		Expect(allocs).To(HaveLen(3))
		Expect(allocs).To(HaveKey("4"))
		Expect(allocs).To(HaveKey("5"))
		Expect(allocs).To(HaveKey("6"))
		for _, a := range allocs {
			Expect(a.ID).To(MatchRegexp(`^[0-9a-f]{64}$`))
			Expect(a.IfName).To(Equal(sim.MigrationInterface))
		}
	})

	// Fault caught: a simulator that frees an address when a pod object is merely gone (hiding
	// the leak migranet must repair), or never frees it (making every rollout leak).
	It("releases a gracefully deleted pod's address (CNI DEL) and keeps a force-deleted pod's (leak)", func(ctx context.Context) {
		graceful := virtHandlers(ctx)[0]
		Expect(f.Client.Delete(ctx, &graceful)).To(Succeed())
		Eventually(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).NotTo(ContainElement(cluster.KubeVirtNamespace + "/" + graceful.Name))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Eventually(func(g Gomega) { // its replacement got the address
			now := virtHandlers(ctx)
			g.Expect(now).To(HaveLen(3))
			for _, p := range now {
				g.Expect(p.Name).NotTo(Equal(graceful.Name))
				g.Expect(podReady(&p)).To(BeTrue(), "virt-handlers: %s", describeVirtHandlers(ctx))
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())

		forced := virtHandlers(ctx)[0]
		Expect(f.Client.Delete(ctx, &forced, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(f.Client.List(ctx, events, client.InNamespace(cluster.KubeVirtNamespace))).To(Succeed())
			var msgs []string
			for _, e := range events.Items {
				if e.Reason == "FailedCreatePodSandBox" && e.InvolvedObject.Kind == "Pod" {
					msgs = append(msgs, e.Message)
				}
			}
			g.Expect(msgs).To(ContainElement(ContainSubstring(`error at storage engine: Could not allocate IP in range: ` +
				`ip: 10.90.0.1 / - 10.90.0.6 / range: 10.90.0.0/29 / excludeRanges: [10.90.0.1/32 10.90.0.2/31]`)))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Consistently(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).To(ContainElement(cluster.KubeVirtNamespace+"/"+forced.Name), "the leaked allocation")
			ready := 0
			for _, p := range virtHandlers(ctx) {
				if podReady(&p) {
					ready++
				}
			}
			g.Expect(ready).To(Equal(2), "the replacement has no address")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	})
})
