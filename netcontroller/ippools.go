package netcontroller

import (
	"context"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
)

// IPPoolList is whereabouts' list kind for its per-range allocation pools.
var IPPoolList = schema.GroupVersionKind{Group: "whereabouts.cni.cncf.io", Version: "v1alpha1", Kind: "IPPoolList"}

// ipPoolKind is whereabouts' IPPool.
var ipPoolKind = schema.GroupVersionKind{Group: IPPoolList.Group, Version: IPPoolList.Version, Kind: "IPPool"}

// Pool is what the cleanup looks at in a whereabouts IPPool.
type Pool struct {
	Name  string
	Range string
	// PodRefs are the namespace/name of every allocation's pod.
	PodRefs []string
	// UID and ResourceVersion guard the delete: a pool written (an address handed out) or made
	// again after it was read is never the one deleted.
	UID             types.UID
	ResourceVersion string
}

// Allocation is one entry of an IPPool's spec.allocations (keyed by the address' offset from the
// start of the range): the container and pod that hold the address.
type Allocation struct {
	ID     string `json:"id"`
	PodRef string `json:"podref"`
	IfName string `json:"ifname,omitempty"`
}

// goneVirtHandler reports whether podRef (namespace/name) names a virt-handler pod of the KubeVirt
// namespace that no longer exists: the only holder whose addresses migranet gives back.
func goneVirtHandler(podRef, namespace string, podExists func(namespace, name string) bool) bool {
	ns, name, ok := strings.Cut(podRef, "/")
	return ok && ns == namespace && strings.HasPrefix(name, settings.VirtHandlerValue+"-") && !podExists(ns, name)
}

// StalePools names the pools migranet's virt-handlers left behind: pools whose range is not the
// current one (none when disabled), that hold at least one allocation, and whose every allocation
// belongs to a virt-handler pod of the KubeVirt namespace that no longer exists. A pool any other
// pod holds an address in is never touched; whereabouts recreates a pool on demand.
func StalePools(pools []Pool, current netip.Prefix, namespace string, podExists func(namespace, name string) bool) []string {
	var stale []string
	for _, p := range pools {
		if r, err := netip.ParsePrefix(p.Range); err == nil && current.IsValid() && r.Masked() == current.Masked() {
			continue
		}
		if len(p.PodRefs) == 0 {
			continue
		}
		ours := true
		for _, ref := range p.PodRefs {
			if !goneVirtHandler(ref, namespace, podExists) {
				ours = false
				break
			}
		}
		if ours {
			stale = append(stale, p.Name)
		}
	}
	return stale
}

// EmptyPools names the pools nothing holds that migranet's network left behind: pools without
// allocations whose range is one of ours (the ranges migranet's NADs used: the setting's
// status.ranges, plus any other RangeSource) and not the current one (none when disabled). A pool
// of a range that was never ours stays, empty or not.
//
// whereabouts v0.9.2 creates a pool on the first CNI ADD of its range (KubernetesIPAM.getPool:
// Get, and Create when not found, named by IPPoolName/normalizeRange after the range alone for a
// NAD without network_name), never deletes one, and empties it entry by entry on CNI DEL, so every
// range migranet's virt-handlers ever used keeps an empty pool for good unless someone deletes it
// (Harvester issue #9501). An ADD that finds none creates it again, so deleting an empty pool
// loses nothing.
func EmptyPools(pools []Pool, current netip.Prefix, ours []netip.Prefix) []string {
	var empty []string
	for _, p := range pools {
		r, err := netip.ParsePrefix(p.Range)
		if err != nil || len(p.PodRefs) != 0 {
			continue
		}
		if current.IsValid() && r.Masked() == current.Masked() {
			continue
		}
		if slices.Contains(ours, r.Masked()) {
			empty = append(empty, p.Name)
		}
	}
	return empty
}

// LeakedAllocations returns, in address order, the keys of the allocations of the current pool
// that nothing will ever release: those held by a virt-handler pod of the KubeVirt namespace
// (<namespace>/virt-handler-*) that no longer exists. whereabouts frees an address only on CNI
// DEL, which a pod that vanished without a graceful teardown (force delete, lost node) never
// gets (Harvester issue #9598). Another namespace's pod, a live pod and any pod not named
// virt-handler-* keep their allocations, whether or not they exist.
func LeakedAllocations(allocations map[string]Allocation, namespace string, podExists func(namespace, name string) bool) []string {
	var keys []string
	for key, a := range allocations {
		if goneVirtHandler(a.PodRef, namespace, podExists) {
			keys = append(keys, key)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return offsetLess(keys[i], keys[j]) })
	return keys
}

// offsetLess orders allocation keys by offset (decimal numbers), keys that are not numbers last.
func offsetLess(a, b string) bool {
	x, okA := new(big.Int).SetString(a, 10)
	y, okB := new(big.Int).SetString(b, 10)
	switch {
	case okA && okB:
		return x.Cmp(y) < 0
	case okA != okB:
		return okA
	}
	return a < b
}

// PoolName is the IPPool whereabouts keeps rng's allocations in, for a NAD without network_name
// (migranet renders none): the range's network in CIDR notation with every ':' and '/' replaced
// by '-' (whereabouts' IPPoolName and normalizeRange): 192.168.100.0/24 → 192.168.100.0-24.
func PoolName(rng netip.Prefix) string {
	s := rng.Masked().String()
	if strings.HasSuffix(s, ":") {
		s += "0"
	}
	return strings.NewReplacer(":", "-", "/", "-").Replace(s)
}

// releaseLeaks reads the current range's pool and whereabouts' reservations, removes the
// allocations LeakedAllocations finds with one resourceVersion-guarded update (a conflict is
// returned; the caller retries), then deletes the reservations LeakedReservations finds (of any
// range). A pod the cache has not seen yet may already hold an address (the CNI ADD runs before
// the informer delivers the pod), so a candidate counts as gone only when it is absent from both
// the cache (inCache) and the API server, read after the pool and the reservations. It returns
// the addresses of the range whereabouts holds afterwards (HeldAddresses: the pool's and the
// reservations'; none without the whereabouts CRDs).
func (r *Controller) releaseLeaks(ctx context.Context, rng netip.Prefix, assignable func(netip.Addr) bool, inCache func(namespace, name string) bool) (map[netip.Addr]bool, error) {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(ipPoolKind)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.WhereaboutsNamespace, Name: PoolName(rng)}, pool)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		pool = nil
	case err != nil:
		return nil, err
	}
	reservations, err := r.listReservations(ctx)
	if err != nil {
		return nil, err
	}
	allocs := poolAllocations(pool)
	if err := r.releaseAllocations(ctx, pool, allocs, rng, inCache); err != nil {
		return HeldAddresses(rng, allocationAddrs(rng, allocs), reservations, assignable), err
	}
	reservations, err = r.releaseReservations(ctx, reservations, inCache)
	return HeldAddresses(rng, allocationAddrs(rng, allocs), reservations, assignable), err
}

// poolAllocations reads a pool's spec.allocations (none for a nil pool).
func poolAllocations(pool *unstructured.Unstructured) map[string]Allocation {
	if pool == nil {
		return nil
	}
	raw, _, _ := unstructured.NestedMap(pool.Object, "spec", "allocations")
	allocs := make(map[string]Allocation, len(raw))
	for key, v := range raw {
		m, _ := v.(map[string]any)
		id, _ := m["id"].(string)
		ref, _ := m["podref"].(string)
		ifName, _ := m["ifname"].(string)
		allocs[key] = Allocation{ID: id, PodRef: ref, IfName: ifName}
	}
	return allocs
}

// allocationAddrs are the addresses of rng the allocation keys stand for (toIPReservationList);
// keys that are not offsets are skipped, as whereabouts skips them.
func allocationAddrs(rng netip.Prefix, allocs map[string]Allocation) []netip.Addr {
	addrs := make([]netip.Addr, 0, len(allocs))
	for key := range allocs {
		if a, ok := AddrAtOffset(rng, key); ok {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// releaseAllocations removes the leaked allocations from the pool (and from allocs) with one
// update carrying the resourceVersion read: whereabouts writes its pools with the same optimistic
// concurrency, so an allocation made meanwhile makes this fail, not vanish.
func (r *Controller) releaseAllocations(ctx context.Context, pool *unstructured.Unstructured, allocs map[string]Allocation, rng netip.Prefix, inCache func(namespace, name string) bool) error {
	if len(LeakedAllocations(allocs, r.KubeVirtNamespace, inCache)) == 0 {
		return nil
	}
	live, err := r.livePods(ctx)
	if err != nil {
		return err
	}
	leaked := LeakedAllocations(allocs, r.KubeVirtNamespace, func(ns, name string) bool {
		return inCache(ns, name) || live[ns+"/"+name]
	})
	if len(leaked) == 0 {
		return nil
	}
	released := make([]string, 0, len(leaked))
	for _, key := range leaked {
		released = append(released, fmt.Sprintf("%s (offset %s)", allocs[key].PodRef, key))
		unstructured.RemoveNestedField(pool.Object, "spec", "allocations", key)
	}
	if err := r.Client.Update(ctx, pool); err != nil {
		return err
	}
	for _, key := range leaked {
		delete(allocs, key)
	}
	ctrl.LoggerFrom(ctx).Info("released whereabouts allocations of virt-handler pods that no longer exist",
		"ippool", pool.GetName(), "range", rng.String(), "released", released)
	return nil
}

// livePods are the pods of the KubeVirt namespace (namespace/name) as the API server has them now:
// one list of their metadata, read after a pool, so an allocation in that pool whose pod is absent
// here belongs to a pod that is gone (a pod exists before its sandbox gets an address).
func (r *Controller) livePods(ctx context.Context) (map[string]bool, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	if err := r.APIReader.List(ctx, pods, client.InNamespace(r.KubeVirtNamespace)); err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(pods.Items))
	for _, p := range pods.Items {
		live[p.Namespace+"/"+p.Name] = true
	}
	return live, nil
}

// CleanPools deletes, in namespace WhereaboutsNamespace, the stale pools (StalePools: holding only
// gone virt-handlers' addresses) and the empty pools of ranges in ours (EmptyPools), never the
// current range's; without the whereabouts CRD there is nothing to do. The cache (inCache) may lag
// behind the pools: the reconcile's view can predate a new value whose virt-handlers already hold
// addresses in a pool, so a pool is deleted only when its holders are absent from the API server
// too, read after the pools. Each delete carries the UID and resourceVersion read: a pool written
// since (a CNI ADD handing out an address, which whereabouts' KubernetesIPPool.Update does with a
// JSON patch testing the resourceVersion it read) is not deleted and is counted in conflicts, for
// the caller to read the pools again; deleted counts the pools deleted.
func (r *Controller) CleanPools(ctx context.Context, current netip.Prefix, ours []netip.Prefix, inCache func(namespace, name string) bool) (deleted, conflicts int, err error) {
	pools, err := r.listPools(ctx)
	if err != nil || len(pools) == 0 {
		return 0, 0, err
	}
	log := ctrl.LoggerFrom(ctx)
	doomed := map[string]string{}
	for _, name := range EmptyPools(pools, current, ours) {
		doomed[name] = "deleting empty whereabouts IPPool of an earlier range of migranet's migration network"
	}
	if len(StalePools(pools, current, r.KubeVirtNamespace, inCache)) > 0 {
		live, err := r.livePods(ctx)
		if err != nil {
			return 0, 0, err
		}
		podExists := func(ns, name string) bool { return inCache(ns, name) || live[ns+"/"+name] }
		for _, name := range StalePools(pools, current, r.KubeVirtNamespace, podExists) {
			doomed[name] = "deleting whereabouts IPPool left by virt-handlers of a previous migration network"
		}
	}
	for _, p := range pools {
		msg, ok := doomed[p.Name]
		if !ok {
			continue
		}
		log.Info(msg, "ippool", p.Name, "range", p.Range)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ipPoolKind)
		u.SetNamespace(r.WhereaboutsNamespace)
		u.SetName(p.Name)
		pre := client.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}
		switch err := r.Client.Delete(ctx, u, pre); {
		case apierrors.IsConflict(err):
			log.Info("whereabouts IPPool changed since it was read; not deleted", "ippool", p.Name)
			conflicts++
		case client.IgnoreNotFound(err) != nil:
			return deleted, conflicts, err
		default:
			deleted++
		}
	}
	return deleted, conflicts, nil
}

// listPools reads every whereabouts IPPool of WhereaboutsNamespace from the API server (none
// without the CRD).
func (r *Controller) listPools(ctx context.Context) ([]Pool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(IPPoolList)
	if err := r.APIReader.List(ctx, list, client.InNamespace(r.WhereaboutsNamespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	pools := make([]Pool, 0, len(list.Items))
	for _, item := range list.Items {
		p := Pool{Name: item.GetName(), UID: item.GetUID(), ResourceVersion: item.GetResourceVersion()}
		p.Range, _, _ = unstructured.NestedString(item.Object, "spec", "range")
		allocs, _, _ := unstructured.NestedMap(item.Object, "spec", "allocations")
		for _, a := range allocs {
			if m, ok := a.(map[string]any); ok {
				ref, _ := m["podref"].(string)
				p.PodRefs = append(p.PodRefs, ref)
			}
		}
		pools = append(pools, p)
	}
	return pools, nil
}

// AddrAtOffset is the address of rng an allocation key stands for: the key is the address'
// decimal offset from the range's first address (whereabouts' toIPReservationList with
// IPAddOffset). False for a key that is not a non-negative decimal or falls outside rng.
func AddrAtOffset(rng netip.Prefix, key string) (netip.Addr, bool) {
	off, ok := new(big.Int).SetString(key, 10)
	if !ok || off.Sign() < 0 {
		return netip.Addr{}, false
	}
	first := rng.Masked().Addr()
	sum := off.Add(off, new(big.Int).SetBytes(first.AsSlice()))
	b := make([]byte, first.BitLen()/8)
	if sum.BitLen() > len(b)*8 {
		return netip.Addr{}, false
	}
	a, _ := netip.AddrFromSlice(sum.FillBytes(b))
	if !rng.Contains(a) {
		return netip.Addr{}, false
	}
	return a, true
}
