package settings

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A migration range that overlaps the cluster's own networks breaks virt-handler: inside its pod,
// the bridge plugin's route for the range through migration0 takes over what the pod network
// routes (other pods of that block, or the Service IPs every client in the pod dials, the API
// server's included), and whereabouts may hand out an address a pod or Service already holds.

// ServiceRanges returns the cluster's Service IP ranges: the spec.cidrs of every ServiceCIDR
// (networking.k8s.io/v1, served since Kubernetes 1.33) read through cached, and the ClusterIPs of
// Service default/kubernetes read through api (the first address of each family's range: where
// ServiceCIDRs are not served, the only trace of --service-cluster-ip-range the API shows), each
// as a single address unless a ServiceCIDR holds it already; without api, the ServiceCIDRs
// alone. Entries that fail to parse are skipped.
//
// It gives up after serviceRangesWait: a cache whose ServiceCIDR informer cannot sync (its RBAC
// not applied yet) would otherwise hold the setting webhook until the API server's timeout.
func ServiceRanges(ctx context.Context, cached, api client.Reader) ([]netip.Prefix, error) {
	ctx, cancel := context.WithTimeout(ctx, serviceRangesWait)
	defer cancel()
	var out []netip.Prefix
	list := &networkingv1.ServiceCIDRList{}
	if err := cached.List(ctx, list); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing ServiceCIDRs: %w", err)
	}
	for _, s := range list.Items {
		for _, c := range s.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	if api == nil {
		return out, nil
	}
	svc := &corev1.Service{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil {
		if apierrors.IsNotFound(err) && len(out) > 0 {
			return out, nil
		}
		return nil, fmt.Errorf("reading Service default/kubernetes: %w", err)
	}
	known := len(out)
	for _, ip := range svc.Spec.ClusterIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil || slices.ContainsFunc(out[:known], func(p netip.Prefix) bool { return p.Contains(a) }) {
			continue
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// PodAddr is a virt-handler pod's address on the pod network (status.podIPs).
type PodAddr struct {
	Pod, Node string
	Addr      netip.Addr
}

// VirtHandlerAddrs returns the pod-network addresses of the virt-handler pods in namespace, read
// through r (the manager's cache holds exactly those pods): the pod network's own addresses on
// whatever CNI, where nodes' spec.podCIDRs may be empty (Calico, Cilium).
func VirtHandlerAddrs(ctx context.Context, r client.Reader, namespace string) ([]PodAddr, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{VirtHandlerLabel: VirtHandlerValue}); err != nil {
		return nil, fmt.Errorf("listing virt-handler pods: %w", err)
	}
	var out []PodAddr
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				out = append(out, PodAddr{Pod: p.Name, Node: p.Spec.NodeName, Addr: a})
			}
		}
	}
	return out, nil
}

// OwnNetworks reads what a range may not overlap besides the nodes' pod ranges: the Service
// ranges (ServiceRanges, through cached and api) and the virt-handlers' pod addresses in
// kubevirtNamespace (VirtHandlerAddrs, through cached). What cannot be read is left out and named
// in missed ("" when nothing is): the setting webhook warns with it, the settings controller logs
// it, and both judge the range without it.
func OwnNetworks(ctx context.Context, cached, api client.Reader, kubevirtNamespace string) (services []netip.Prefix, pods []PodAddr, missed string) {
	var miss []string
	services, err := ServiceRanges(ctx, cached, api)
	if err != nil {
		miss = append(miss, "the cluster's Service ranges ("+err.Error()+")")
	}
	if pods, err = VirtHandlerAddrs(ctx, cached, kubevirtNamespace); err != nil {
		miss = append(miss, "the virt-handlers' pod addresses ("+err.Error()+")")
	}
	return services, pods, strings.Join(miss, " and ")
}

// serviceRangesWait bounds ServiceRanges.
const serviceRangesWait = time.Second

// clusterBlock is one of the cluster's own networks and where it was read.
type clusterBlock struct {
	prefix netip.Prefix
	what   string // "the Service range", "the pod range of node node-1 (spec.podCIDRs)"
}

// overlapping lists cl's networks that overlap rng: its Service ranges, each distinct node pod
// range with the nodes that carry it (spec.podCIDRs, else spec.podCIDR), then the virt-handlers'
// pod addresses. Only those are worded: a cluster of thousands of nodes costs a walk, no text.
func (cl *Cluster) overlapping(rng netip.Prefix) []clusterBlock {
	var out []clusterBlock
	for _, p := range cl.ServiceRanges {
		if !p.Overlaps(rng) {
			continue
		}
		what := "the cluster's Service range"
		if p.IsSingleIP() {
			what = "the cluster's Service range (its first address, Service default/kubernetes)"
		}
		out = append(out, clusterBlock{p, what})
	}
	owners := map[netip.Prefix][]string{}
	var order []netip.Prefix
	for _, n := range cl.Nodes {
		if n == nil {
			continue
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil || !p.Overlaps(rng) {
				continue
			}
			p = p.Masked()
			if _, seen := owners[p]; !seen {
				order = append(order, p)
			}
			owners[p] = append(owners[p], n.Name)
		}
	}
	for _, p := range order {
		names := owners[p]
		slices.Sort(names)
		out = append(out, clusterBlock{p, fmt.Sprintf("the pod range of %s %s (spec.podCIDRs)", Plural(len(names), "node", "nodes"), listNodes(names))})
	}
	for _, a := range cl.PodAddrs {
		if !rng.Contains(a.Addr) {
			continue
		}
		out = append(out, clusterBlock{netip.PrefixFrom(a.Addr, a.Addr.BitLen()),
			fmt.Sprintf("the pod network address of %s on %s (status.podIPs)", a.Pod, orNone(a.Node))})
	}
	return out
}

// orNone is s, or "no node" for "".
func orNone(s string) string {
	if s == "" {
		return "no node"
	}
	return s
}

// maxListedBlocks bounds how many overlapping blocks an error names.
const maxListedBlocks = 5

// checkClusterRanges refuses a range overlapping the cluster's Service or pod networks, naming each
// block it touches (at most maxListedBlocks, then a count).
func checkClusterRanges(rng netip.Prefix, rawRange string, cl *Cluster, rangePath *field.Path) *field.Error {
	var hits []string
	for _, b := range cl.overlapping(rng) {
		hits = append(hits, b.prefix.String()+", "+b.what)
	}
	if len(hits) == 0 {
		return nil
	}
	list := strings.Join(hits[:min(len(hits), maxListedBlocks)], "; ")
	if len(hits) > maxListedBlocks {
		list += fmt.Sprintf("; and %d more", len(hits)-maxListedBlocks)
	}
	return field.Invalid(rangePath, rawRange, fmt.Sprintf(
		"overlaps the cluster's own networks: %s; inside virt-handler's pod the route through migration0 would take that "+
			"traffic off the pod network (and whereabouts could hand out addresses already in use); pick a range outside them", list))
}
