package sim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestParseBridgeConf follows containernetworking/plugins v1.9.1 plugins/main/bridge/bridge.go:
// loadNetConf refuses a VLAN outside 0–4094 with its own message, and nothing else in the
// configuration is checked against the node (ensureBridge creates a missing bridge, setupVeth
// takes any MTU).
// Catches: a Multus simulator that attaches a NAD whose VLAN the bridge plugin refuses (the pod
// would go Ready where a real one stays in ContainerCreating), or that refuses what attaches.
func TestParseBridgeConf(t *testing.T) {
	cases := []struct {
		name, config string
		want         BridgeConf
		err          string
	}{
		{"migranet's rendering", `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"mtu":9000,"ipam":{}}`,
			BridgeConf{Bridge: "migration-br", VLAN: 100, MTU: 9000}, ""},
		{"untagged, no MTU", `{"type":"bridge","bridge":"migration-br"}`, BridgeConf{Bridge: "migration-br"}, ""},
		{"VLAN 4094 is the highest", `{"type":"bridge","bridge":"b-br","vlan":4094}`, BridgeConf{Bridge: "b-br", VLAN: 4094}, ""},
		{"no bridge: the plugin's default", `{"type":"bridge"}`, BridgeConf{Bridge: "cni0"}, ""},
		{"VLAN 4095", `{"type":"bridge","bridge":"b-br","vlan":4095}`, BridgeConf{}, "invalid VLAN ID 4095 (must be between 0 and 4094)"},
		{"VLAN -1", `{"type":"bridge","bridge":"b-br","vlan":-1}`, BridgeConf{}, "invalid VLAN ID -1 (must be between 0 and 4094)"},
		{"MTU far above any uplink still attaches", `{"type":"bridge","bridge":"b-br","mtu":65000}`, BridgeConf{Bridge: "b-br", MTU: 65000}, ""},
		{"not JSON", `{`, BridgeConf{}, "failed to load netconf"},
		{"another plugin", `{"type":"macvlan"}`, BridgeConf{}, "not simulated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBridgeConf(tc.config)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestNodeUplink follows network-controller-harvester v1.8.2: the agent labels a node
// network.harvesterhci.io/<cn>=true once the cluster network's bridge and uplink are up
// (addNodeLabel after setupVLAN, pkg/controller/agent/vlanconfig/controller.go), the uplink bond's
// MTU is the VlanConfig's spec.uplink.linkAttributes.mtu (setUplink), 0 leaving the default 1500.
// Catches: a simulator that gives a node without the label an uplink, or ignores its MTU.
func TestNodeUplink(t *testing.T) {
	node := func(labels, annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: annotations}}
	}
	carries := map[string]string{"network.harvesterhci.io/migration": "true"}
	cases := []struct {
		name   string
		node   *corev1.Node
		bridge string
		want   Uplink
	}{
		{"carried, default MTU", node(carries, nil), "migration-br", Uplink{Carried: true, MTU: 1500}},
		{"carried, jumbo uplink", node(carries, map[string]string{"uplink-mtu.sim.migranet.io/migration": "9000"}), "migration-br", Uplink{Carried: true, MTU: 9000}},
		{"label false", node(map[string]string{"network.harvesterhci.io/migration": "false"}, nil), "migration-br", Uplink{MTU: 1500}},
		{"another cluster network's label", node(map[string]string{"network.harvesterhci.io/mgmt": "true"}, nil), "migration-br", Uplink{MTU: 1500}},
		{"unparsable MTU: default", node(carries, map[string]string{"uplink-mtu.sim.migranet.io/migration": "jumbo"}), "migration-br", Uplink{Carried: true, MTU: 1500}},
		{"a bridge of no cluster network", node(carries, nil), "cni0", Uplink{}},
		{"no node", nil, "migration-br", Uplink{}},
	}
	for _, tc := range cases {
		if got := NodeUplink(tc.node, tc.bridge); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
