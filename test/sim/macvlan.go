package sim

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/test/cluster"
)

// The macvlan CNI model below follows github.com/containernetworking/plugins v1.9.1,
// plugins/main/macvlan/macvlan.go (loadConf, modeFromString); none is copied. With real node
// networks the plugin itself runs (Multus.realAttach); this is what the simulators and the
// virt-handler stand-in read of a macvlan NAD.

// LinkConf is what a NAD's configuration gives the pod interface: a bridge port (BridgeConf) or,
// with Master set, a macvlan over the node interface Master.
type LinkConf struct {
	BridgeConf
	// Master is the macvlan's node interface ("master"); "" for a bridge.
	Master string
}

// ParseLinkConf reads a NAD's bridge configuration (ParseBridgeConf) or macvlan configuration as
// the macvlan plugin's loadConf and modeFromString do: an unknown mode or a negative mtu fails the
// ADD with the plugin's message. An empty master (the plugin's default-route interface) is not
// simulated, nor is whether the master exists and carries the mtu (the real plugin checks both
// against the node's kernel).
func ParseLinkConf(config string) (LinkConf, error) {
	var c struct {
		Type   string `json:"type"`
		Master string `json:"master"`
		Mode   string `json:"mode"`
		MTU    int    `json:"mtu"`
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return LinkConf{}, fmt.Errorf("failed to load netconf: %v", err)
	}
	if c.Type != "macvlan" {
		br, err := ParseBridgeConf(config)
		return LinkConf{BridgeConf: br}, err
	}
	switch c.Mode {
	case "", "bridge", "private", "vepa", "passthru":
	default:
		return LinkConf{}, fmt.Errorf("unknown macvlan mode: %q", c.Mode)
	}
	if c.Master == "" {
		return LinkConf{}, fmt.Errorf("a macvlan without master (the default-route interface) is not simulated")
	}
	if c.MTU < 0 {
		return LinkConf{}, fmt.Errorf("invalid MTU %d, must be [0, master MTU]", c.MTU)
	}
	return LinkConf{BridgeConf: BridgeConf{MTU: c.MTU}, Master: c.Master}, nil
}

// NodeNICMTU is the MTU of node's NIC nic (annotation cluster.NICMTUAnnotationPrefix+nic), else
// DefaultUplinkMTU.
func NodeNICMTU(node *corev1.Node, nic string) int {
	if node != nil {
		if v, err := strconv.Atoi(node.Annotations[cluster.NICMTUAnnotationPrefix+nic]); err == nil && v > 0 {
			return v
		}
	}
	return DefaultUplinkMTU
}

// LinkUplink is what carries link's frames off node: its cluster network's uplink for a bridge
// port (NodeUplink), the master NIC for a macvlan (every lab node has cluster.LabNIC; any other
// master is not there).
func LinkUplink(node *corev1.Node, link Link) Uplink {
	if link.Master == "" {
		return NodeUplink(node, link.Bridge)
	}
	if node == nil || link.Master != cluster.LabNIC {
		return Uplink{}
	}
	return Uplink{Carried: true, MTU: NodeNICMTU(node, link.Master)}
}
