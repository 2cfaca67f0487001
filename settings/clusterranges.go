package settings

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A migration range that overlaps the cluster's own networks breaks virt-handler: inside its pod,
// the bridge plugin's route for the range through migration0 takes over what the pod network
// routes (other pods of that block, or the Service IPs every client in the pod dials, the API
// server's included), and whereabouts may hand out an address a pod or Service already holds.

// PodAddr is a virt-handler pod's address on the pod network (status.podIPs).
type PodAddr struct {
	Pod, Node string
	Addr      netip.Addr
}

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
