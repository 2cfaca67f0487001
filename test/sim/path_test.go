package sim

import (
	"net/netip"
	"strings"
	"testing"
)

// TestMigrationPath is the virt-handler stand-in's decision whether a migration's stream gets
// through (see MigrationPath for the upstream facts each row stands on).
// Catches: a stand-in that completes every migration whatever the network (no spec could then
// show what a broken migration network does), or one that fails migrations that work.
func TestMigrationPath(t *testing.T) {
	link := func(nad, bridge string, vlan, mtu int, addr, prefix string) *Link {
		return &Link{NAD: nad, BridgeConf: BridgeConf{Bridge: bridge, VLAN: vlan, MTU: mtu},
			Addr: netip.MustParseAddr(addr), Prefix: netip.MustParsePrefix(prefix)}
	}
	jumbo := Uplink{Carried: true, MTU: 9000}
	std := Uplink{Carried: true, MTU: 1500}
	v100a := link("kubevirt/a", "migration-br", 100, 9000, "192.168.100.2", "192.168.100.0/24")
	v100b := link("kubevirt/a", "migration-br", 100, 9000, "192.168.100.3", "192.168.100.0/24")
	v200 := link("kubevirt/b", "migration-br", 200, 9000, "192.168.100.4", "192.168.100.0/24")
	other := link("kubevirt/c", "migration-br", 100, 9000, "10.9.0.3", "10.9.0.0/24")
	noMTU := link("kubevirt/d", "migration-br", 100, 0, "192.168.100.5", "192.168.100.0/24")
	side := func(node string, l *Link, u Uplink) Side { return Side{Node: node, Migration0: l, Uplink: u} }
	cases := []struct {
		name     string
		src, dst Side
		want     string // "ok", "broken" or "stalls"
		network  string
		why      string
	}{
		{"same NAD, jumbo uplinks", side("n1", v100a, jumbo), side("n2", v100b, jumbo), "ok", "Migration", ""},
		{"no migration network on either side: pod network", side("n1", nil, Uplink{}), side("n2", nil, Uplink{}), "ok", "Pod", ""},
		{"target without migration0 listens on its pod IP", side("n1", v100a, jumbo), side("n2", nil, Uplink{}), "ok", "Pod", ""},
		{"source without migration0", side("n1", nil, Uplink{}), side("n2", v100b, jumbo), "broken", "Migration", "source node n1's virt-handler has no migration0"},
		{"different VLANs mid-roll", side("n1", v100a, jumbo), side("n2", v200, jumbo), "broken", "Migration", "VLAN 100"},
		{"target address outside the source's subnet", side("n1", v100a, jumbo), side("n2", other, jumbo), "broken", "Migration", "outside the source node n1's migration0 subnet"},
		{"source node lost its cluster network", side("n1", v100a, Uplink{MTU: 9000}), side("n2", v100b, jumbo), "broken", "Migration", "source node n1 does not carry cluster network migration"},
		{"target node without the cluster network", side("n1", v100a, jumbo), side("n2", v100b, Uplink{MTU: 9000}), "broken", "Migration", "target node n2 does not carry"},
		{"MTU 9000 over a 1500 uplink on the target", side("n1", v100a, jumbo), side("n2", v100b, std), "stalls", "Migration", "uplink of MTU 1500"},
		{"MTU 9000 over a 1500 uplink on the source", side("n1", v100a, std), side("n2", v100b, jumbo), "stalls", "Migration", "source node n1 1500"},
		{"interfaces of different MTUs: TCP's MSS takes the smaller", side("n1", v100a, std), side("n2", noMTU, std), "ok", "Migration", ""},
		{"default MTU over default uplinks", side("n1", noMTU, std), side("n2", link("kubevirt/d", "migration-br", 100, 0, "192.168.100.6", "192.168.100.0/24"), std), "ok", "Migration", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := MigrationPath(tc.src, tc.dst)
			got := "ok"
			switch {
			case v.Broken && v.Stalls:
				got = "broken and stalls"
			case v.Broken:
				got = "broken"
			case v.Stalls:
				got = "stalls"
			}
			if got != tc.want || v.Network != tc.network || !strings.Contains(v.Why, tc.why) || (tc.why == "") != (v.Why == "") {
				t.Fatalf("got %s over %s (%q), want %s over %s (%q)", got, v.Network, v.Why, tc.want, tc.network, tc.why)
			}
		})
	}
}
