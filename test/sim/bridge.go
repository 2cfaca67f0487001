package sim

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
)

// The bridge CNI model below follows github.com/containernetworking/plugins v1.9.1 (the version
// harvester/network-controller-harvester v1.8.2 requires), plugins/main/bridge/bridge.go, and the
// Harvester cluster network model of network-controller-harvester v1.8.2. Each function names the
// upstream one it follows; none is copied.

// DefaultUplinkMTU is the MTU of a cluster network's uplink whose VlanConfig sets none: Harvester's
// setUplink (pkg/controller/agent/vlanconfig/controller.go) leaves linkAttrs.MTU 0 and the bond
// keeps the kernel's 1500 (utils.DefaultMTU, pkg/utils/consts.go). A veth made with mtu 0
// (ip.SetupVeth, pkg/ip/link_linux.go) has 1500 as well.
const DefaultUplinkMTU = 1500

// ClusterNetworkLabelPrefix + <cluster network> = "true" is the label Harvester's agent puts on a
// node once that cluster network's bridge and uplink are set up there (addNodeLabel, after
// setupVLAN) and removes when they are torn down (removeNodeLabel).
const ClusterNetworkLabelPrefix = "network.harvesterhci.io/"

// BridgeConf is the part of a bridge CNI configuration the simulators act on (bridge.go NetConf).
type BridgeConf struct {
	// Bridge is the bridge's name ("bridge"; the plugin's default is cni0).
	Bridge string `json:"bridge"`
	// VLAN tags the pod's port ("vlan"; 0 = untagged).
	VLAN int `json:"vlan"`
	// MTU of the veth pair ("mtu"; 0 = the kernel's default, 1500).
	MTU int `json:"mtu"`
}

// ParseBridgeConf reads a NAD's bridge configuration as loadNetConf does: a VLAN outside 0–4094
// fails the ADD with the plugin's own message. Nothing else about the node is checked there:
// ensureBridge creates the bridge when it does not exist (LinkAdd; EEXIST is fine) and setupVeth
// makes the veth pair with the configured MTU and enslaves it (LinkSetMaster) whatever the MTU of
// the bridge's other ports, so a node without the cluster network, or an uplink with a smaller
// MTU, still gets its interface and address (seen on Linux 6.18: a 9000-byte veth joins a bridge
// whose other port has 1500 without error).
func ParseBridgeConf(config string) (BridgeConf, error) {
	var c struct {
		Type string `json:"type"`
		BridgeConf
	}
	c.Bridge = "cni0"
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return BridgeConf{}, fmt.Errorf("failed to load netconf: %v", err)
	}
	if c.Type != "bridge" {
		return BridgeConf{}, fmt.Errorf("CNI plugin type %q is not simulated (only bridge)", c.Type)
	}
	if c.VLAN < 0 || c.VLAN > 4094 {
		return BridgeConf{}, fmt.Errorf("invalid VLAN ID %d (must be between 0 and 4094)", c.VLAN)
	}
	return c.BridgeConf, nil
}

// ClusterNetworkOf is the Harvester cluster network a bridge belongs to: network-controller names
// a cluster network's bridge <cn>-br (utils.BridgeSuffix); "" for any other bridge.
func ClusterNetworkOf(bridge string) string {
	cn, ok := strings.CutSuffix(bridge, "-br")
	if !ok {
		return ""
	}
	return cn
}

// Uplink is what a node's cluster network gives a bridge port: whether the bridge has an uplink
// at all, and its MTU.
type Uplink struct {
	// Carried: the node carries the cluster network (ClusterNetworkLabelPrefix+cn = "true"). A
	// bridge the plugin created on a node that does not has no uplink: its ports reach only
	// each other.
	Carried bool
	// MTU of the uplink bond.
	MTU int
}

// NodeUplink reads node's uplink for the bridge's cluster network.
func NodeUplink(node *corev1.Node, bridge string) Uplink {
	cn := ClusterNetworkOf(bridge)
	if node == nil || cn == "" {
		return Uplink{}
	}
	u := Uplink{Carried: node.Labels[ClusterNetworkLabelPrefix+cn] == "true", MTU: DefaultUplinkMTU}
	if v, err := strconv.Atoi(node.Annotations[cluster.UplinkMTUAnnotationPrefix+cn]); err == nil && v > 0 {
		u.MTU = v
	}
	return u
}

// Link is one pod interface the bridge plugin attached, as the simulators remember it.
type Link struct {
	// NAD is the attachment's namespace/name.
	NAD string
	BridgeConf
	// Addr is the interface's address and Prefix the range it came from (the interface's subnet).
	Addr   netip.Addr
	Prefix netip.Prefix
	// Mac is the interface's MAC address.
	Mac string
	// Sandbox is the pod sandbox's network namespace when the real plugins made the link, ""
	// when it is simulated.
	Sandbox nodenet.NS
	// Master is the node interface of a macvlan link; "" for a bridge port.
	Master string
	// TagSimulated: the config asks for a VLAN tag, which this kernel cannot apply (no 802.1Q):
	// the real plugins made the link untagged and VLAN says which tag it stands for.
	TagSimulated bool
}

// EffectiveMTU is the veth's MTU: the configured one, else the kernel's default.
func (l Link) EffectiveMTU() int {
	if l.MTU > 0 {
		return l.MTU
	}
	return DefaultUplinkMTU
}
