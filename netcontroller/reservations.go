package netcontroller

import (
	"context"
	"net/netip"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// whereabouts (v0.9.2, enable_overlapping_ranges on by default) records every address it hands
// out twice: as an entry of the range's IPPool and as an OverlappingRangeIPReservation named
// after the address, in the same namespace. IPManagementKubernetesUpdate
// (pkg/storage/kubernetes/ipam.go) skips an address whose reservation names another pod, so an
// address is free again only when both are gone; CNI DEL removes both, a pod that vanished
// without DEL leaves both behind.

// ReservationList is whereabouts' list kind for its cluster-wide address reservations.
var ReservationList = schema.GroupVersionKind{Group: IPPoolList.Group, Version: IPPoolList.Version, Kind: "OverlappingRangeIPReservationList"}

var reservationKind = schema.GroupVersionKind{Group: IPPoolList.Group, Version: IPPoolList.Version, Kind: "OverlappingRangeIPReservation"}

// Reservation is what the cleanup looks at in an OverlappingRangeIPReservation.
type Reservation struct {
	Name   string
	PodRef string
	// UID and ResourceVersion guard the delete: a reservation made again for the same address
	// after it was read is never the one deleted.
	UID             types.UID
	ResourceVersion string
}

// ReservationName is the name of the reservation of a, for a NAD without network_name (migranet
// renders none): the address with every ':' replaced by '-', a trailing ':' completed by '0'
// first (whereabouts' NormalizeIP): 192.168.100.5 → 192.168.100.5, fd00:10:77::5 → fd00-10-77--5.
func ReservationName(a netip.Addr) string {
	s := a.String()
	if strings.HasSuffix(s, ":") {
		s += "0"
	}
	return strings.ReplaceAll(s, ":", "-")
}

// ReservedAddr is the address an unnamed network's reservation stands for (ReservationName
// reversed); false for the name of a reservation of a named network ("<network_name>-<address>"),
// which never blocks an address of migranet's NAD.
func ReservedAddr(name string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(name); err == nil && a.Is4() {
		return a, true
	}
	a, err := netip.ParseAddr(strings.ReplaceAll(name, "-", ":"))
	if err != nil || !a.Is6() || ReservationName(a) != name {
		return netip.Addr{}, false
	}
	return a, true
}

// LeakedReservations returns, sorted, the names of the reservations nothing will ever release:
// those of a virt-handler pod of the KubeVirt namespace that no longer exists (the same holders
// LeakedAllocations releases), whatever range the address is in — a reservation outlives the pool
// of a previous migration network and would block its addresses if the range came back.
func LeakedReservations(reservations []Reservation, namespace string, podExists func(namespace, name string) bool) []string {
	var names []string
	for _, r := range reservations {
		if goneVirtHandler(r.PodRef, namespace, podExists) {
			names = append(names, r.Name)
		}
	}
	sort.Strings(names)
	return names
}

// HeldAddresses are the distinct addresses whereabouts will not hand out from rng: the pool's
// allocations (poolAddrs) and every unnamed reservation of an address inside rng that assignable
// accepts (an address reserved by another range's pod is as taken as one of migranet's pool).
func HeldAddresses(rng netip.Prefix, poolAddrs []netip.Addr, reservations []Reservation, assignable func(netip.Addr) bool) map[netip.Addr]bool {
	held := make(map[netip.Addr]bool, len(poolAddrs)+len(reservations))
	for _, a := range poolAddrs {
		held[a] = true
	}
	for _, r := range reservations {
		if a, ok := ReservedAddr(r.Name); ok && rng.Contains(a) && assignable(a) {
			held[a] = true
		}
	}
	return held
}

// listReservations reads every reservation in whereabouts' namespace (none without its CRD).
func (r *Controller) listReservations(ctx context.Context) ([]Reservation, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ReservationList)
	if err := r.APIReader.List(ctx, list, client.InNamespace(r.WhereaboutsNamespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]Reservation, 0, len(list.Items))
	for _, item := range list.Items {
		ref, _, _ := unstructured.NestedString(item.Object, "spec", "podref")
		out = append(out, Reservation{Name: item.GetName(), PodRef: ref, UID: item.GetUID(), ResourceVersion: item.GetResourceVersion()})
	}
	return out, nil
}

// releaseReservations deletes the reservations LeakedReservations finds among reservations. A
// candidate counts as gone only when it is absent from the cache (inCache) and from the API
// server, read after the reservations (a pod exists before whereabouts reserves its address). It
// returns the reservations left.
func (r *Controller) releaseReservations(ctx context.Context, reservations []Reservation, inCache func(namespace, name string) bool) ([]Reservation, error) {
	if len(LeakedReservations(reservations, r.KubeVirtNamespace, inCache)) == 0 {
		return reservations, nil
	}
	live, err := r.livePods(ctx)
	if err != nil {
		return reservations, err
	}
	leaked := LeakedReservations(reservations, r.KubeVirtNamespace, func(ns, name string) bool {
		return inCache(ns, name) || live[ns+"/"+name]
	})
	byName := make(map[string]Reservation, len(reservations))
	for _, res := range reservations {
		byName[res.Name] = res
	}
	gone := make(map[string]bool, len(leaked))
	for _, name := range leaked {
		res := byName[name]
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(reservationKind)
		u.SetNamespace(r.WhereaboutsNamespace)
		u.SetName(name)
		pre := client.Preconditions{UID: &res.UID, ResourceVersion: &res.ResourceVersion}
		if err := r.Client.Delete(ctx, u, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return reservations, err
		}
		gone[name] = true
	}
	ctrl.LoggerFrom(ctx).Info("released whereabouts reservations of virt-handler pods that no longer exist", "reservations", leaked)
	left := make([]Reservation, 0, len(reservations)-len(gone))
	for _, res := range reservations {
		if !gone[res.Name] {
			left = append(left, res)
		}
	}
	return left, nil
}
