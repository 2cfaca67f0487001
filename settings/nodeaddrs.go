package settings

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A node's own address (status.addresses, InternalIP or ExternalIP) that whereabouts may assign
// from the range would be handed to a virt-handler: on an untagged bridge that is the node's own
// segment, and the two hosts answer for one address. An address the range never assigns (its
// first or last, or excluded) is harmless.

// nodeAddr is a node's address and its kind.
type nodeAddr struct {
	node, kind string
	addr       netip.Addr
}

// assignableNodeAddrs lists the nodes' InternalIP and ExternalIP addresses that n may assign.
func assignableNodeAddrs(n *Network, nodes []*corev1.Node) []nodeAddr {
	var out []nodeAddr
	for _, nd := range nodes {
		if nd == nil {
			continue
		}
		for _, a := range nd.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err == nil && n.Assignable(ip.Unmap()) {
				out = append(out, nodeAddr{node: nd.Name, kind: string(a.Type), addr: ip.Unmap()})
			}
		}
	}
	return out
}

// checkNodeAddrs refuses a range that may assign a node's own address, naming each (at most
// maxListedBlocks, then a count) and the excludes that would keep them out.
func checkNodeAddrs(n *Network, rawRange string, nodes []*corev1.Node, rangePath *field.Path) *field.Error {
	hits := assignableNodeAddrs(n, nodes)
	if len(hits) == 0 {
		return nil
	}
	var named, excl []string
	for i, h := range hits {
		if i < maxListedBlocks {
			named = append(named, fmt.Sprintf("%s (%s of node %s)", h.addr, h.kind, h.node))
			excl = append(excl, fmt.Sprintf("%q", netip.PrefixFrom(h.addr, h.addr.BitLen())))
		}
	}
	list := strings.Join(named, ", ")
	if len(hits) > maxListedBlocks {
		list += fmt.Sprintf(" and %d more", len(hits)-maxListedBlocks)
	}
	return field.Invalid(rangePath, rawRange, fmt.Sprintf(
		"holds nodes' own addresses that whereabouts would hand to virt-handlers: %s; pick a range outside the nodes' "+
			"network, or exclude them (\"exclude\": [%s])", list, strings.Join(excl, ", ")))
}
