package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"strings"

	"go4.org/netipx"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The whereabouts model below follows github.com/k8snetworkplumbingwg/whereabouts (master,
// 2026-11): its kubernetes storage (pkg/storage/kubernetes/ipam.go), its allocator
// (pkg/allocate/allocate.go), its config loading (pkg/config/config.go) and its address helpers
// (pkg/iphelpers). Each function names the upstream one it follows; none is copied.

// WhereaboutsNamespace is where whereabouts keeps its IPPools: the namespace of its kubeconfig's
// context, kube-system when that names none (wbNamespaceFromCtx).
const WhereaboutsNamespace = "kube-system"

// IPPoolGVK is whereabouts' per-range allocation object.
var IPPoolGVK = schema.GroupVersionKind{Group: "whereabouts.cni.cncf.io", Version: "v1alpha1", Kind: "IPPool"}

// datastoreRetries bounds the read-modify-write attempts on a pool (storage.DatastoreRetries).
const datastoreRetries = 100

// WhereaboutsRange is a NAD's whereabouts IPAM configuration as whereabouts uses it once loaded.
type WhereaboutsRange struct {
	// Prefix is the range's network (LoadIPAMConfig keeps ipNet.String() of the configured
	// range, so 192.168.100.7/24 becomes 192.168.100.0/24).
	Prefix netip.Prefix
	// Exclude are the excluded ranges as written in the config (the error text prints them so).
	Exclude []string
	// NetworkName is the optional network_name, which prefixes the pool's name.
	NetworkName string

	excludes []netip.Prefix
}

// ParseWhereaboutsRange reads the ipam part of a NAD's CNI config (of a plugin list: its first
// plugin's, the one that makes the interface and delegates IPAM). Only a single "range" CIDR is
// simulated (no range_start/range_end, ipRanges or node slices: migranet renders none of them).
func ParseWhereaboutsRange(config string) (WhereaboutsRange, error) {
	var cfg struct {
		IPAM struct {
			Type        string   `json:"type"`
			Range       string   `json:"range"`
			Exclude     []string `json:"exclude"`
			NetworkName string   `json:"network_name"`
		} `json:"ipam"`
	}
	chain, err := readChain(config) // a list's IPAM is its first plugin's
	if err != nil {
		return WhereaboutsRange{}, fmt.Errorf("invalid CNI config: %v", err)
	}
	if err := json.Unmarshal([]byte(chain.main), &cfg); err != nil {
		return WhereaboutsRange{}, fmt.Errorf("invalid CNI config: %v", err)
	}
	if cfg.IPAM.Type != "whereabouts" {
		return WhereaboutsRange{}, fmt.Errorf("ipam type %q is not simulated (only whereabouts)", cfg.IPAM.Type)
	}
	p, err := netip.ParsePrefix(cfg.IPAM.Range)
	if err != nil {
		return WhereaboutsRange{}, fmt.Errorf("invalid CIDR %s: %v", cfg.IPAM.Range, err)
	}
	r := WhereaboutsRange{Prefix: p.Masked(), Exclude: cfg.IPAM.Exclude, NetworkName: cfg.IPAM.NetworkName}
	for _, e := range cfg.IPAM.Exclude {
		x, err := parseExcluded(e)
		if err != nil {
			return WhereaboutsRange{}, fmt.Errorf("invalid CIDR in exclude list %s: %v", e, err)
		}
		r.excludes = append(r.excludes, x)
	}
	return r, nil
}

// parseExcluded accepts a CIDR or a bare address (as /32 or /128), as parseExcludedRange does;
// the whole subnet, network and broadcast included, is excluded.
func parseExcluded(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// PoolName is the IPPool whereabouts keeps a range's allocations in: IPPoolName's default naming
// (no node slices), "<network_name>-" when one is set, then normalizeRange of the range: a
// trailing ':' gets a '0', every ':' and '/' becomes '-'. 192.168.100.0/24 → 192.168.100.0-24,
// fd00:10::/64 → fd00-10---64.
func PoolName(networkName string, rng netip.Prefix) string {
	s := rng.String()
	if strings.HasSuffix(s, ":") {
		s += "0"
	}
	s = strings.NewReplacer(":", "-", "/", "-").Replace(s)
	if networkName != "" {
		return networkName + "-" + s
	}
	return s
}

// OffsetKey is the key of an address in spec.allocations: its decimal offset from the first
// address of spec.range (toAllocationMap with IPGetOffset).
func OffsetKey(rng netip.Prefix, a netip.Addr) string {
	return new(big.Int).Sub(addrInt(a), addrInt(rng.Masked().Addr())).String()
}

// AddrAtKey is the address an allocation key stands for (toIPReservationList with IPAddOffset);
// false for a key that is not a decimal offset, which whereabouts ignores.
func AddrAtKey(rng netip.Prefix, key string) (netip.Addr, bool) {
	off, ok := new(big.Int).SetString(key, 10)
	if !ok || off.Sign() < 0 {
		return netip.Addr{}, false
	}
	sum := new(big.Int).Add(addrInt(rng.Masked().Addr()), off)
	b := make([]byte, rng.Addr().BitLen()/8)
	if sum.BitLen() > len(b)*8 {
		return netip.Addr{}, false
	}
	a, _ := netip.AddrFromSlice(sum.FillBytes(b))
	return a, true
}

func addrInt(a netip.Addr) *big.Int { return new(big.Int).SetBytes(a.AsSlice()) }

// assignmentError is whereabouts' AssignmentError: the range is exhausted.
type assignmentError struct {
	first, last netip.Addr
	rng         netip.Prefix
	exclude     []string
}

func (e assignmentError) Error() string {
	return fmt.Sprintf("Could not allocate IP in range: ip: %v / - %v / range: %s / excludeRanges: %v",
		e.first, e.last, e.rng, e.exclude)
}

// LowestFree is the address IterateForAssignment hands out: the lowest one from the first usable
// (network + 1) to the last usable (broadcast - 1) address that is neither reserved nor inside
// an excluded subnet. An exhausted range fails with whereabouts' own error text.
func LowestFree(r WhereaboutsRange, reserved map[netip.Addr]bool) (netip.Addr, error) {
	p := r.Prefix
	if p.Addr().BitLen()-p.Bits() <= 1 { // HasUsableIPs
		return netip.Addr{}, fmt.Errorf("net mask is too short, subnet %s has no usable IP addresses, it is too small", p)
	}
	first, last := p.Addr().Next(), netipx.PrefixLastIP(p).Prev()
	for a := first; a.IsValid() && a.Compare(last) <= 0; a = a.Next() {
		if reserved[a] || excludedBy(a, r.excludes) {
			continue
		}
		return a, nil
	}
	return netip.Addr{}, assignmentError{first: first, last: last, rng: p, exclude: r.Exclude}
}

func excludedBy(a netip.Addr, excludes []netip.Prefix) bool {
	for _, x := range excludes {
		if x.Contains(a) {
			return true
		}
	}
	return false
}

// IPAllocation is one entry of an IPPool's spec.allocations.
type IPAllocation struct {
	ID     string `json:"id"`
	PodRef string `json:"podref"`
	IfName string `json:"ifname,omitempty"`
}

// ipPool is the part of an IPPool the simulator reads.
type ipPool struct {
	ResourceVersion string
	Range           netip.Prefix
	Allocations     map[string]IPAllocation
}

// getPool reads a pool from the API server; false when it does not exist.
func getPool(ctx context.Context, c client.Client, name string) (*ipPool, bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(IPPoolGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: WhereaboutsNamespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	var spec struct {
		Range       string                  `json:"range"`
		Allocations map[string]IPAllocation `json:"allocations"`
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, false, fmt.Errorf("IPPool %s: %v", name, err)
	}
	rng, err := netip.ParsePrefix(spec.Range)
	if err != nil {
		return nil, false, fmt.Errorf("IPPool %s: range: %v", name, err)
	}
	if spec.Allocations == nil {
		spec.Allocations = map[string]IPAllocation{}
	}
	return &ipPool{ResourceVersion: u.GetResourceVersion(), Range: rng, Allocations: spec.Allocations}, true, nil
}

// createPool creates an empty pool for the range, as getPool upstream does on first use (and
// then retries its loop, so every write starts from a read).
func createPool(ctx context.Context, c client.Client, name string, rng netip.Prefix) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": WhereaboutsNamespace},
		"spec":     map[string]any{"range": rng.String(), "allocations": map[string]any{}},
	}}
	u.SetGroupVersionKind(IPPoolGVK)
	if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("k8s create error: %s", err)
	}
	return nil
}

// patchPool writes allocation changes (nil: remove) as KubernetesIPPool.Update does: a JSON patch
// whose first operation tests metadata.resourceVersion, so a concurrent writer makes it fail and
// the caller reads again. retry is true for such a failure.
func patchPool(ctx context.Context, c client.Client, name, resourceVersion string, changes map[string]*IPAllocation) (retry bool, err error) {
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": resourceVersion}}
	for key, a := range changes {
		path := "/spec/allocations/" + key
		if a == nil {
			ops = append(ops, map[string]any{"op": "remove", "path": path})
		} else {
			ops = append(ops, map[string]any{"op": "add", "path": path, "value": a})
		}
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(IPPoolGVK)
	u.SetNamespace(WhereaboutsNamespace)
	u.SetName(name)
	err = c.Patch(ctx, u, client.RawPatch(types.JSONPatchType, data))
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return true, err
	}
	return false, err
}

// whereaboutsAdd allocates an address of r to the pod's interface (IPManagementKubernetesUpdate
// in Allocate mode with AssignIP): an allocation the pod already holds for that interface is
// reused under the new container ID, otherwise the lowest free address is taken; the pool is
// created on first use; a conflicting write is retried from a fresh read. With overlapping ranges
// (whereabouts' default) an address whose OverlappingRangeIPReservation names another pod is
// skipped and the next one tried, and the address taken is reserved after the pool write
// (UpdateOverlappingRangeAllocation) unless the pod already holds its reservation.
func whereaboutsAdd(ctx context.Context, c client.Client, r WhereaboutsRange, containerID, podRef, ifName string) (netip.Addr, error) {
	name := PoolName(r.NetworkName, r.Prefix)
	var lastErr error
	skipped := map[netip.Addr]bool{} // reserved by another pod (the "dummy records")
	for range datastoreRetries {
		pool, found, err := getPool(ctx, c, name)
		if err != nil {
			return netip.Addr{}, err
		}
		if !found {
			if err := createPool(ctx, c, name, r.Prefix); err != nil {
				return netip.Addr{}, err
			}
			continue
		}
		reserved := maps.Clone(skipped)
		var ip netip.Addr
		for key, a := range pool.Allocations {
			addr, ok := AddrAtKey(pool.Range, key)
			if !ok {
				continue
			}
			reserved[addr] = true
			if a.PodRef == podRef && a.IfName == ifName {
				ip = addr
			}
		}
		if !ip.IsValid() {
			if ip, err = LowestFree(r, reserved); err != nil {
				return netip.Addr{}, err
			}
		}
		holder, err := reservationHolder(ctx, c, ip, r.NetworkName)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("k8s get OverlappingRangeIPReservation error: %s", err)
		}
		if holder != "" && holder != podRef {
			skipped[ip] = true
			continue
		}
		alloc := &IPAllocation{ID: containerID, PodRef: podRef, IfName: ifName}
		retry, err := patchPool(ctx, c, name, pool.ResourceVersion, map[string]*IPAllocation{OffsetKey(pool.Range, ip): alloc})
		if err == nil {
			if holder == "" {
				return ip, reserve(ctx, c, ip, r.NetworkName, podRef, ifName, containerID)
			}
			return ip, nil
		}
		if !retry {
			return netip.Addr{}, err
		}
		lastErr = err
	}
	return netip.Addr{}, fmt.Errorf("IPAM error updating pool: %v", lastErr)
}

// ReservationGVK is whereabouts' cluster-wide reservation of one address.
var ReservationGVK = schema.GroupVersionKind{Group: IPPoolGVK.Group, Version: IPPoolGVK.Version, Kind: "OverlappingRangeIPReservation"}

// ReservationName is the reservation's name for an address (NormalizeIP): ':' becomes '-' (a
// trailing ':' gets a '0' first), prefixed by "<network_name>-" when one is set.
func ReservationName(a netip.Addr, networkName string) string {
	s := a.String()
	if strings.HasSuffix(s, ":") {
		s += "0"
	}
	s = strings.ReplaceAll(s, ":", "-")
	if networkName != "" {
		return networkName + "-" + s
	}
	return s
}

// reservationHolder is the podref of a's reservation, "" when there is none
// (GetOverlappingRangeIPReservation).
func reservationHolder(ctx context.Context, c client.Client, a netip.Addr, networkName string) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ReservationGVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: WhereaboutsNamespace, Name: ReservationName(a, networkName)}, u)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	ref, _, _ := unstructured.NestedString(u.Object, "spec", "podref")
	return ref, nil
}

// reserve creates a's reservation (UpdateOverlappingRangeAllocation in Allocate mode).
func reserve(ctx context.Context, c client.Client, a netip.Addr, networkName, podRef, ifName, containerID string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": ReservationName(a, networkName), "namespace": WhereaboutsNamespace},
		"spec":     map[string]any{"podref": podRef, "ifname": ifName, "containerid": containerID},
	}}
	u.SetGroupVersionKind(ReservationGVK)
	return c.Create(ctx, u)
}

// unreserve deletes a's reservation (UpdateOverlappingRangeAllocation in Deallocate mode).
func unreserve(ctx context.Context, c client.Client, a netip.Addr, networkName string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ReservationGVK)
	u.SetNamespace(WhereaboutsNamespace)
	u.SetName(ReservationName(a, networkName))
	return c.Delete(ctx, u)
}

// whereaboutsDel releases what the container holds on the interface in the pool (Deallocate mode
// with DeallocateIP: matched by container ID and interface; nothing held is no error), then the
// address' reservation.
func whereaboutsDel(ctx context.Context, c client.Client, pool, networkName, containerID, ifName string) error {
	var lastErr error
	for range datastoreRetries {
		p, found, err := getPool(ctx, c, pool)
		if err != nil || !found {
			return err
		}
		changes := map[string]*IPAllocation{}
		var freed netip.Addr
		for key, a := range p.Allocations {
			if a.ID == containerID && a.IfName == ifName {
				changes[key] = nil
				freed, _ = AddrAtKey(p.Range, key)
				break
			}
		}
		if len(changes) == 0 {
			return nil
		}
		retry, err := patchPool(ctx, c, pool, p.ResourceVersion, changes)
		if err == nil && freed.IsValid() {
			return unreserve(ctx, c, freed, networkName)
		}
		if err == nil || !retry {
			return err
		}
		lastErr = err
	}
	return fmt.Errorf("IPAM error updating pool: %v", lastErr)
}
