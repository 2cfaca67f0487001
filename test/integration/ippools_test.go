package integration

import (
	"context"
	"fmt"
	"net/netip"
	"time"

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
	// cannot start. Also caught: releasing another namespace's allocation in the same pool, and
	// releasing the address of a virt-handler the manager's cache has not seen yet (its
	// replacement allocates while the old pod's deletion is being handled).
	It("releases them from the current pool, so replacements get addresses, and leaves another namespace's alone", func(ctx context.Context) {
		const small = `{"clusterNetwork":"migration","range":"10.89.0.0/29","exclude":["10.89.0.1"]}` // 5 usable: 3 nodes + 2
		const poolName = "10.89.0.0-29"
		rng := netip.MustParsePrefix("10.89.0.0/29")
		setValue(ctx, small)
		waitReady(ctx, netcontroller.ReasonReady)
		nad := expectedNAD(small)

		// A pod of another namespace attaches the migration NAD (Multus resolves kubevirt/<nad> from
		// any namespace) and is then force-deleted: its allocation leaks too, but is not migranet's.
		ns := f.Namespace(ctx)
		tenant := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0",
				Annotations: map[string]string{sim.NetworksAnnotation: cluster.KubeVirtNamespace + "/" + nad + "@net1"}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "web"}}},
		}
		Expect(f.Client.Create(ctx, tenant)).To(Succeed())
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
		want := map[string]string{tenantKey: ns + "/web-0"}
		for _, p := range virtHandlers(ctx) {
			want[sim.OffsetKey(rng, migrationIP(&p))] = cluster.KubeVirtNamespace + "/" + p.Name
		}
		Eventually(func(g Gomega) map[string]string {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			return podRefs(allocs)
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(want))
		Eventually(func() *v1beta1.IPCapacity { return setting(ctx).Status.Capacity }).WithContext(ctx).
			WithTimeout(framework.Short).Should(Equal(&v1beta1.IPCapacity{Usable: 5, Used: 4, Free: 1}),
			"used counts the pool's allocations, the tenant's leak included")
		Consistently(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(allocs).To(HaveKeyWithValue(tenantKey, tenantAlloc[tenantKey]))
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})
})
