package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The uplink MTU of a Harvester cluster network against the migration network's MTU
// (docs/harvester.md, "What the network controller adds to the NAD" and "Node labels, witness
// nodes, the uplink MTU"). Harvester's network controller sets each node's uplink to the MTU of
// the VlanConfig matching that node; the NAD of a value takes one MTU for every node. A frame the
// NAD's MTU allows but a node's uplink does not carry is dropped there, and Harvester's own webhooks
// let both be stored.

// Annotations Harvester's network controller writes.
const (
	// AnnotationUplinkMTU on a ClusterNetwork is the uplink MTU its NADs take (an integer, 0
	// meaning DefaultUplinkMTU), copied there from a VlanConfig by the network controller.
	AnnotationUplinkMTU = "network.harvesterhci.io/uplink-mtu"
	// AnnotationMatchedNodes on a VlanConfig is the JSON list of the nodes it applies to (never a
	// witness node).
	AnnotationMatchedNodes = "network.harvesterhci.io/matched-nodes"
)

// DefaultUplinkMTU is the MTU of an uplink whose VlanConfig sets none (0), and of a NAD whose
// cluster network says none.
const DefaultUplinkMTU = 1500

// maxHarvesterMTU is the largest MTU Harvester's network controller accepts (0 or 576..9000); the
// NAD mutator passes over a VlanConfig's MTU outside that range.
const maxHarvesterMTU = 9000

// maxListedUplinks bounds the VlanConfigs one message names.
const maxListedUplinks = 10

// Uplink is one VlanConfig of Harvester's network controller, as the MTU checks read it.
type Uplink struct {
	// VlanConfig is its name.
	VlanConfig string
	// ClusterNetwork is its spec.clusterNetwork.
	ClusterNetwork string
	// MTU is its spec.uplink.linkAttributes.mtu, 0 meaning DefaultUplinkMTU.
	MTU int
	// Nodes are the names of its matched-nodes annotation; nil when it has none.
	Nodes []string
}

// mtu is the MTU the uplink carries: DefaultUplinkMTU for 0.
func (u Uplink) mtu() int {
	if u.MTU == 0 {
		return DefaultUplinkMTU
	}
	return u.MTU
}

// describe is "vc-a (MTU 9000; nodes worker-1, worker-2)".
func (u Uplink) describe() string {
	nodes := "no matched-nodes annotation"
	switch {
	case u.Nodes == nil:
	case len(u.Nodes) == 0:
		nodes = "no nodes matched"
	case len(u.Nodes) == 1:
		nodes = "node " + u.Nodes[0]
	default:
		nodes = "nodes " + listNodes(u.Nodes)
	}
	return fmt.Sprintf("%s (MTU %d; %s)", u.VlanConfig, u.mtu(), nodes)
}

// Uplinks are the VlanConfigs and ClusterNetworks the MTU checks judge a value's cluster network
// against.
type Uplinks struct {
	// VlanConfigs in the order read: the first of a cluster network is the one Harvester's NAD
	// takes its MTU from when the ClusterNetwork has no annotation.
	VlanConfigs []Uplink
	// Annotated is the AnnotationUplinkMTU of each ClusterNetwork that carries one, by name, as
	// written (0 meaning DefaultUplinkMTU).
	Annotated map[string]int
}

// of are the VlanConfigs of cluster network cn.
func (u Uplinks) of(cn string) []Uplink {
	var out []Uplink
	for _, vc := range u.VlanConfigs {
		if vc.ClusterNetwork == cn {
			out = append(out, vc)
		}
	}
	return out
}

// HarvesterNADMTU is the MTU Harvester's network controller gives a NAD on cluster network cn:
// the ClusterNetwork's annotation when it has one, else the first VlanConfig's MTU (when between
// 576 and 9000), else DefaultUplinkMTU; from says which.
func (u Uplinks) HarvesterNADMTU(cn string) (mtu int, from string) {
	if a, ok := u.Annotated[cn]; ok {
		if a == 0 {
			a = DefaultUplinkMTU
		}
		return a, fmt.Sprintf("the ClusterNetwork's annotation %s", AnnotationUplinkMTU)
	}
	vcs := u.of(cn)
	if len(vcs) == 0 {
		return DefaultUplinkMTU, "the default: no ClusterNetwork annotation, no VlanConfig"
	}
	first := vcs[0]
	if first.MTU < MinMTU || first.MTU > maxHarvesterMTU {
		return DefaultUplinkMTU, fmt.Sprintf("the default: the first VlanConfig, %s, sets no MTU from %d to %d", first.VlanConfig, MinMTU, maxHarvesterMTU)
	}
	return first.MTU, "the first VlanConfig, " + first.VlanConfig
}

// CheckHarvesterUplinks judges the cluster network of Harvester's vm-migration-network value n
// against its VlanConfigs: they must all set the same uplink MTU, and the NAD's MTU
// (HarvesterNADMTU) must be no larger than any of them; errors on fld.clusterNetwork. Without a
// VlanConfig of n's cluster network nothing is judged (the uplinks are not known). A nil n is
// not judged.
func (u Uplinks) CheckHarvesterUplinks(n *Network, fld *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	cn := n.ClusterNetwork
	vcs := u.of(cn)
	if len(vcs) == 0 {
		return nil
	}
	nad, from := u.HarvesterNADMTU(cn)
	differ := false
	var smaller []Uplink
	for _, vc := range vcs {
		differ = differ || vc.mtu() != vcs[0].mtu()
		if vc.mtu() < nad {
			smaller = append(smaller, vc)
		}
	}
	if !differ && len(smaller) == 0 {
		return nil
	}
	fix := fmt.Sprintf("set the same spec.uplink.linkAttributes.mtu on every VlanConfig of cluster network %q", cn)
	if !differ {
		fix = fmt.Sprintf("set spec.uplink.linkAttributes.mtu %d on every VlanConfig of cluster network %q", nad, cn)
		if _, ok := u.Annotated[cn]; ok {
			fix = fmt.Sprintf("set the ClusterNetwork's annotation to %d, or %s", vcs[0].mtu(), fix)
		}
		return field.ErrorList{field.Invalid(fld.Child(keyClusterNetwork), cn, fmt.Sprintf(
			"Harvester's NAD takes MTU %d (%s), more than the uplink MTU %d every VlanConfig of cluster network %q sets: %s; "+
				"the nodes behind them drop full-size migration frames; %s",
			nad, from, vcs[0].mtu(), cn, describeUplinks(vcs), fix))}
	}
	effect := " now, but the network controller copies a VlanConfig's MTU to the ClusterNetwork's annotation whenever it " +
		"handles that VlanConfig, so the MTU a NAD takes can grow past the smaller uplinks, and the nodes behind them then drop " +
		"full-size migration frames"
	if len(smaller) > 0 {
		names := make([]string, 0, len(smaller))
		for _, vc := range smaller {
			names = append(names, vc.VlanConfig)
		}
		effect = fmt.Sprintf(", more than the uplink of %s carries: the nodes behind it drop full-size migration frames", listNodes(names))
	}
	msg := fmt.Sprintf("the VlanConfigs of cluster network %q set different uplink MTUs: %s; Harvester's NAD takes MTU %d (%s)%s; %s",
		cn, describeUplinks(vcs), nad, from, effect, fix)
	return field.ErrorList{field.Invalid(fld.Child(keyClusterNetwork), cn, msg)}
}

// CheckUplinkMTU judges the mtu of migranet's own value n against the VlanConfigs of its cluster
// network: no uplink may be smaller; error on fld.mtu. An mtu of 0 (the bridge's), a nil n, or no
// VlanConfig of n's cluster network is not judged; nor is a macvlan network, whose frames leave by
// its master, not by the cluster network's uplink (the macvlan plugin itself refuses an mtu above
// the master's when it attaches a pod).
func (u Uplinks) CheckUplinkMTU(n *Network, fld *field.Path) field.ErrorList {
	if n == nil || n.MTU == 0 || n.Macvlan != nil {
		return nil
	}
	var smaller []Uplink
	least := n.MTU
	for _, vc := range u.of(n.ClusterNetwork) {
		if vc.mtu() < n.MTU {
			smaller = append(smaller, vc)
			least = min(least, vc.mtu())
		}
	}
	if len(smaller) == 0 {
		return nil
	}
	what, which := "VlanConfig", "VlanConfig "+smaller[0].VlanConfig
	if len(smaller) > 1 {
		what, which = "VlanConfigs", "those VlanConfigs"
	}
	return field.ErrorList{field.Invalid(fld.Child(keyMTU), n.MTU, fmt.Sprintf(
		"is more than cluster network %q carries on the uplink of %s %s: the nodes behind it drop full-size migration frames; "+
			"lower mtu to %d, or raise spec.uplink.linkAttributes.mtu of %s to %d",
		n.ClusterNetwork, what, describeUplinks(smaller), least, which, n.MTU))}
}

// describeUplinks is "vc-a 9000 (nodes worker-1, worker-2), vc-b 1500 (node worker-3)", at most
// maxListedUplinks of them, then "and N more".
func describeUplinks(vcs []Uplink) string {
	parts := make([]string, 0, min(len(vcs), maxListedUplinks))
	for _, vc := range vcs[:min(len(vcs), maxListedUplinks)] {
		parts = append(parts, vc.describe())
	}
	s := strings.Join(parts, ", ")
	if len(vcs) > maxListedUplinks {
		s += fmt.Sprintf(" and %d more", len(vcs)-maxListedUplinks)
	}
	return s
}
