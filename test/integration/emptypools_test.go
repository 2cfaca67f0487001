package integration

import (
	"context"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// emptyPool creates the IPPool name of rng as whereabouts' getPool creates one on the first CNI
// ADD of a range, and as the last CNI DEL leaves it: no allocations. It is deleted after the spec.
func emptyPool(ctx context.Context, name, rng string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sim.IPPoolGVK)
	u.SetNamespace(sim.WhereaboutsNamespace)
	u.SetName(name)
	ExpectWithOffset(1, unstructured.SetNestedField(u.Object, rng, "spec", "range")).To(Succeed())
	ExpectWithOffset(1, unstructured.SetNestedMap(u.Object, map[string]any{}, "spec", "allocations")).To(Succeed())
	ExpectWithOffset(1, f.Client.Create(ctx, u)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, u))).To(Succeed()) })
	return u
}

func poolGone(ctx context.Context, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sim.IPPoolGVK)
	return apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKey{Namespace: sim.WhereaboutsNamespace, Name: name}, u))
}

// racingClient is the API as the cleanup meets it while a CNI ADD allocates in the pool it is
// about to delete: before the delete of pool (and only then) an allocation is written into it,
// as whereabouts' KubernetesIPPool.Update does between the cleanup's read and its delete.
type racingClient struct {
	client.Client
	pool string
}

func (c racingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if obj.GetName() == c.pool {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(sim.IPPoolGVK)
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
			return err
		}
		alloc := map[string]any{"id": "c-race", "podref": "tenant/web-0", "ifname": "net1"}
		if err := unstructured.SetNestedMap(u.Object, map[string]any{"2": alloc}, "spec", "allocations"); err != nil {
			return err
		}
		if err := c.Client.Update(ctx, u); err != nil {
			return err
		}
	}
	return c.Client.Delete(ctx, obj, opts...)
}

var _ = Describe("empty whereabouts pools of earlier ranges", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Faults caught: the empty pool of a range migranet's network used stays forever once the
	// network moves on (Harvester #9501: whereabouts empties a pool on CNI DEL and never deletes
	// it); an empty pool of a range migranet never used is deleted; a range not recorded before
	// its NAD (its pool would never be known as migranet's).
	It("deletes the empty pools of the ranges migranet's network used, and never one of a range it did not use", func(ctx context.Context) {
		// Ranges of this spec alone: another spec's leftovers (a tenant's leaked allocation) would
		// hold their pools.
		const (
			valueA              = `{"clusterNetwork":"migration","range":"10.71.0.0/29","exclude":["10.71.0.1"]}`
			valueB              = `{"clusterNetwork":"migration","range":"10.72.0.0/29","exclude":["10.72.0.1"]}`
			valueC              = `{"clusterNetwork":"migration","range":"10.70.0.0/29","exclude":["10.70.0.1"]}`
			poolA, poolB, poolC = "10.71.0.0-29", "10.72.0.0-29", "10.70.0.0-29"
		)
		never := emptyPool(ctx, "10.75.0.0-24", "10.75.0.0/24")

		By("range A, then B: A's pool, filled by the rollout and emptied by the next, goes")
		setValue(ctx, valueA)
		waitReady(ctx, netcontroller.ReasonReady)
		Expect(setting(ctx).Status.Ranges).To(ContainElement("10.71.0.0/29"))
		Eventually(func(g Gomega) {
			allocs, err := poolAllocations(ctx, poolA)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(allocs).To(HaveLen(3), "the current range's pool holds the virt-handlers' addresses")
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		// The suite's nodes have real networks: the real whereabouts plugin (v0.9.2) made the pool
		// on the first CNI ADD and empties it on each CNI DEL of the rollout; what the pool held
		// when it was deleted is the last state a watch delivers.
		Expect(f.NodeNetworks).NotTo(BeNil(), "the real CNI plugins run on this suite's nodes")
		w, err := dynamic.NewForConfigOrDie(f.Config).Resource(sim.IPPoolGVK.GroupVersion().WithResource("ippools")).
			Namespace(sim.WhereaboutsNamespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + poolA})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		setValue(ctx, valueB)
		waitReady(ctx, netcontroller.ReasonReady)
		Expect(setting(ctx).Status.Ranges).To(ContainElements("10.71.0.0/29", "10.72.0.0/29"))
		Eventually(poolGone).WithContext(ctx).WithArguments(poolA).WithTimeout(framework.Short).Should(BeTrue(), "the pool of range A")
		var last *unstructured.Unstructured
		Eventually(func() watch.EventType {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return "watch closed"
				}
				last, _ = ev.Object.(*unstructured.Unstructured)
				return ev.Type
			case <-time.After(100 * time.Millisecond):
				return "no event"
			}
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(watch.Deleted))
		allocs, _, _ := unstructured.NestedMap(last.Object, "spec", "allocations")
		Expect(allocs).To(BeEmpty(), "the real plugin's CNI DELs emptied range A's pool before migranet deleted it")

		By("range C: the empty pool whereabouts left of A (made again by hand) and B's go, C's stays")
		emptyPool(ctx, poolA, "10.71.0.0/29")
		setValue(ctx, valueC)
		waitReady(ctx, netcontroller.ReasonReady)
		Eventually(poolGone).WithContext(ctx).WithArguments(poolA).WithTimeout(framework.Short).Should(BeTrue(), "the empty pool of range A")
		Eventually(poolGone).WithContext(ctx).WithArguments(poolB).WithTimeout(framework.Short).Should(BeTrue(), "the pool of range B")
		Consistently(func(g Gomega) {
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(never), never.DeepCopy())).To(Succeed(), "the empty pool of a range never migranet's")
			allocs, err := poolAllocations(ctx, poolC)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(allocs).To(HaveLen(3), "the current range's pool")
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})

	// Fault caught: a pool deleted without the resourceVersion it was read with, so an address a
	// CNI ADD hands out between the cleanup's read and its delete goes with the pool. The API
	// server answers the precondition; the write in between is made by racingClient.
	It("keeps a pool written between the cleanup's read and its delete", func(ctx context.Context) {
		// Ranges the running manager does not know as migranet's: only this spec's cleanup acts on them.
		raced := emptyPool(ctx, "10.74.0.0-24", "10.74.0.0/24")
		calm := emptyPool(ctx, "10.73.0.0-24", "10.73.0.0/24")
		r := &netcontroller.Controller{
			Client: racingClient{Client: f.Client, pool: raced.GetName()}, APIReader: f.Client,
			KubeVirtNamespace: cluster.KubeVirtNamespace, WhereaboutsNamespace: sim.WhereaboutsNamespace,
		}
		ours := []netip.Prefix{netip.MustParsePrefix("10.74.0.0/24"), netip.MustParsePrefix("10.73.0.0/24")}
		inCache := func(string, string) bool { return true } // no stale pool: only the empty ones are at stake
		_, conflicts, err := r.CleanPools(ctx, netip.MustParsePrefix("192.168.100.0/24"), ours, inCache)
		Expect(err).NotTo(HaveOccurred())
		Expect(conflicts).To(Equal(1))
		allocs, err := poolAllocations(ctx, raced.GetName())
		Expect(err).NotTo(HaveOccurred())
		Expect(podRefs(allocs)).To(Equal(map[string]string{"2": "tenant/web-0"}), "the pool and the allocation made meanwhile")
		Expect(poolGone(ctx, calm.GetName())).To(BeTrue(), "an empty pool nobody wrote goes")

		By("read again: the pool holds an address now, so it is no longer empty and stays")
		_, conflicts, err = r.CleanPools(ctx, netip.MustParsePrefix("192.168.100.0/24"), ours, inCache)
		Expect(err).NotTo(HaveOccurred())
		Expect(conflicts).To(Equal(0))
		Expect(poolGone(ctx, raced.GetName())).To(BeFalse())
	})
})
