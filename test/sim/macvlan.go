package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/test/cluster"
)

// The macvlan and ipvlan CNI model below follows github.com/containernetworking/plugins v1.9.1,
// plugins/main/macvlan/macvlan.go and plugins/main/ipvlan/ipvlan.go (loadConf, modeFromString);
// none is copied. With real node
// networks the plugin itself runs (Multus.realAttach); this is what the simulators and the
// virt-handler stand-in read of a macvlan NAD.

// LinkConf is what a NAD's configuration gives the pod interface: a bridge port (BridgeConf) or,
// with Master set, a macvlan or ipvlan over the node interface Master.
type LinkConf struct {
	BridgeConf
	// Master is the macvlan's or ipvlan's node interface ("master"); "" for a bridge.
	Master string
}

// ParseLinkConf reads a NAD's configuration, a plugin or a plugin list (readChain: the first
// plugin makes the interface): a bridge configuration (ParseBridgeConf), or a macvlan or ipvlan
// one as those plugins' loadConf and modeFromString read it: an unknown mode or a negative mtu
// fails the ADD with the plugin's message. A tuning plugin later in the list with an "mtu" sets
// the interface's MTU after it is made, so that is the link's MTU. An empty master (the plugin's
// default-route interface) is not simulated, nor is whether the master exists and carries the
// mtu (the real plugin checks both against the node's kernel).
func ParseLinkConf(config string) (LinkConf, error) {
	chain, err := readChain(config)
	if err != nil {
		return LinkConf{}, err
	}
	lc, err := parseMainLink(chain.main)
	if err == nil && chain.tuningMTU > 0 {
		lc.MTU = chain.tuningMTU
	}
	return lc, err
}

// parseMainLink reads the plugin that makes the interface.
func parseMainLink(config string) (LinkConf, error) {
	var c struct {
		Type   string `json:"type"`
		Master string `json:"master"`
		Mode   string `json:"mode"`
		MTU    int    `json:"mtu"`
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return LinkConf{}, fmt.Errorf("failed to load netconf: %v", err)
	}
	modes := map[string][]string{"macvlan": {"", "bridge", "private", "vepa", "passthru"}, "ipvlan": {"", "l2", "l3", "l3s"}}
	known, ok := modes[c.Type]
	if !ok {
		br, err := ParseBridgeConf(config)
		return LinkConf{BridgeConf: br}, err
	}
	if !slices.Contains(known, c.Mode) {
		return LinkConf{}, fmt.Errorf("unknown %s mode: %q", c.Type, c.Mode)
	}
	if c.Master == "" {
		return LinkConf{}, fmt.Errorf("a %s without master (the default-route interface) is not simulated", c.Type)
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
