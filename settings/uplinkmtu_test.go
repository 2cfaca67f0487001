package settings

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestUplinkChecks covers what the CLI's testdata cases do not: each case names the fault it
// catches.
func TestUplinkChecks(t *testing.T) {
	vc := func(name, cn string, mtu int, nodes ...string) Uplink {
		return Uplink{VlanConfig: name, ClusterNetwork: cn, MTU: mtu, Nodes: nodes}
	}
	many := make([]Uplink, 12)
	for i := range many {
		many[i] = vc(fmt.Sprintf("vc-%02d", i), "migration", 9000)
	}
	many[11].MTU = 1500
	harvester := &Network{ClusterNetwork: "migration", VLAN: 100}
	jumbo := &Network{ClusterNetwork: "migration", VLAN: 100, MTU: 9000}
	tests := []struct {
		name, fault string
		up          Uplinks
		n           *Network
		harvester   bool
		want        []wantErr
	}{
		{name: "different MTUs, the NAD at the smallest", harvester: true, n: harvester,
			fault: "VlanConfigs of different MTUs pass while the NAD's MTU happens to be the smallest",
			up: Uplinks{Annotated: map[string]int{"migration": 1500},
				VlanConfigs: []Uplink{vc("vc-a", "migration", 1500, "w1"), vc("vc-b", "migration", 9000, "w2")}},
			want: []wantErr{inv("value.clusterNetwork", "set different uplink MTUs", "takes MTU 1500", " now, but ")}},
		{name: "annotation 0 is 1500", harvester: true, n: harvester,
			fault: "an annotation of 0 is read as MTU 0 instead of 1500",
			up:    Uplinks{Annotated: map[string]int{"migration": 0}, VlanConfigs: []Uplink{vc("vc-a", "migration", 1400, "w1")}},
			want:  []wantErr{inv("value.clusterNetwork", "takes MTU 1500 (the ClusterNetwork's annotation", "uplink MTU 1400")}},
		{name: "first VlanConfig without a valid MTU gives the default", harvester: true, n: harvester,
			fault: "the first VlanConfig's MTU is taken when Harvester's mutator passes over it",
			up:    Uplinks{VlanConfigs: []Uplink{vc("vc-a", "migration", 100000), vc("vc-b", "migration", 1500)}},
			want: []wantErr{inv("value.clusterNetwork",
				"takes MTU 1500 (the default: the first VlanConfig, vc-a, sets no MTU from 576 to 9000) now, but")}},
		{name: "unknown matched nodes said so", harvester: true, n: harvester,
			fault: "a VlanConfig without the matched-nodes annotation is listed as matching no node",
			up: Uplinks{VlanConfigs: []Uplink{{VlanConfig: "vc-a", ClusterNetwork: "migration", MTU: 9000, Nodes: []string{}},
				{VlanConfig: "vc-b", ClusterNetwork: "migration", MTU: 1500}}},
			want: []wantErr{inv("value.clusterNetwork", "vc-b (MTU 1500; no matched-nodes annotation)", "vc-a (MTU 9000; no nodes matched)")}},
		{name: "many VlanConfigs bounded", harvester: true, n: harvester,
			fault: "a message lists every VlanConfig of a large cluster",
			up:    Uplinks{VlanConfigs: many},
			want:  []wantErr{inv("value.clusterNetwork", "vc-09 (MTU 9000; no matched-nodes annotation) and 2 more", "more than the uplink of vc-11 carries")}},
		{name: "smallest of several uplinks is the fix", n: jumbo,
			fault: "the fix names an MTU some uplink still does not carry",
			up: Uplinks{VlanConfigs: []Uplink{vc("vc-c", "migration", 1400, "w3", "w4"), vc("vc-b", "migration", 9000, "w2"),
				vc("vc-a", "migration", 1500, "w1")}},
			want: []wantErr{inv("value.mtu", "VlanConfigs vc-c (MTU 1400; nodes w3, w4), vc-a (MTU 1500; node w1)",
				"lower mtu to 1400, or raise spec.uplink.linkAttributes.mtu of those VlanConfigs to 9000")}},
		{name: "a macvlan network's frames leave by its master, not the cluster network's uplink",
			n:     &Network{ClusterNetwork: "migration", MTU: 9000, Macvlan: &Macvlan{Master: "ens5", Mode: "bridge"}},
			fault: "a macvlan value refused for the MTU of VlanConfigs its frames never cross",
			up:    Uplinks{VlanConfigs: []Uplink{vc("vc-a", "migration", 1500, "w1")}}},
		{name: "nil network", n: nil, harvester: true, fault: "a disabled or invalid value is judged",
			up: Uplinks{VlanConfigs: []Uplink{vc("vc-a", "migration", 9000), vc("vc-b", "migration", 1500)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("fault: %s", tc.fault)
			var got field.ErrorList
			if tc.harvester {
				got = tc.up.CheckHarvesterUplinks(tc.n, field.NewPath("value"))
			} else {
				got = tc.up.CheckUplinkMTU(tc.n, field.NewPath("value"))
			}
			checkErrs(t, got, tc.want)
		})
	}
}
