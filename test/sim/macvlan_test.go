package sim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/test/cluster"
)

// TestParseLinkConf follows containernetworking/plugins v1.9.1 plugins/main/macvlan/macvlan.go
// (loadConf, modeFromString) for macvlan, the same of plugins/main/ipvlan/ipvlan.go for ipvlan and
// ParseBridgeConf for bridge, each alone or first of a plugin list. Catches: a macvlan NAD read as
// a bridge (or refused as "not simulated"), an unknown mode accepted, a list read by its top level
// (no type: refused) or a tuning plugin's MTU not seen.
func TestParseLinkConf(t *testing.T) {
	tests := []struct {
		name, config string
		want         LinkConf
		err          string
	}{
		{"macvlan", `{"type":"macvlan","master":"ens5","mode":"bridge","mtu":9000}`, LinkConf{BridgeConf: BridgeConf{MTU: 9000}, Master: "ens5"}, ""},
		{"macvlan without mode", `{"type":"macvlan","master":"ens5"}`, LinkConf{Master: "ens5"}, ""},
		{"bridge beside it", `{"type":"bridge","bridge":"migration-br","mtu":9000}`, LinkConf{BridgeConf: BridgeConf{Bridge: "migration-br", MTU: 9000}}, ""},
		{"unknown mode", `{"type":"macvlan","master":"ens5","mode":"source"}`, LinkConf{}, `unknown macvlan mode: "source"`},
		{"no master", `{"type":"macvlan"}`, LinkConf{}, "not simulated"},
		{"ipvlan", `{"type":"ipvlan","master":"ens5","mode":"l3","mtu":8000}`, LinkConf{BridgeConf: BridgeConf{MTU: 8000}, Master: "ens5"}, ""},
		{"ipvlan unknown mode", `{"type":"ipvlan","master":"ens5","mode":"bridge"}`, LinkConf{}, `unknown ipvlan mode: "bridge"`},
		{"ipvlan without master", `{"type":"ipvlan"}`, LinkConf{}, "not simulated"},
		{"another plugin", `{"type":"ptp"}`, LinkConf{}, "not simulated"},
		// Plugin lists: the first plugin makes the interface, a later tuning's mtu is its MTU.
		{"list of one bridge", `{"cniVersion":"1.0.0","plugins":[{"type":"bridge","bridge":"migration-br","mtu":9000}]}`,
			LinkConf{BridgeConf: BridgeConf{Bridge: "migration-br", MTU: 9000}}, ""},
		{"bridge then tuning's mtu", `{"plugins":[{"type":"bridge","bridge":"migration-br","mtu":9000},{"type":"tuning","mtu":1300}]}`,
			LinkConf{BridgeConf: BridgeConf{Bridge: "migration-br", MTU: 1300}}, ""},
		{"tuning without mtu keeps the main plugin's", `{"plugins":[{"type":"macvlan","master":"ens5","mtu":8000},{"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}}]}`,
			LinkConf{BridgeConf: BridgeConf{MTU: 8000}, Master: "ens5"}, ""},
		{"bandwidth after the bridge changes nothing", `{"plugins":[{"type":"bridge","bridge":"migration-br","vlan":100},{"type":"bandwidth","ingressRate":1000,"ingressBurst":1000}]}`,
			LinkConf{BridgeConf: BridgeConf{Bridge: "migration-br", VLAN: 100}}, ""},
		{"a list's main plugin judged as itself", `{"plugins":[{"type":"macvlan","master":"ens5","mode":"source"},{"type":"tuning"}]}`, LinkConf{}, `unknown macvlan mode: "source"`},
		{"a list whose 2nd plugin has no type", `{"plugins":[{"type":"bridge"},{"mtu":1300}]}`, LinkConf{}, "spec.config.plugins[1].type: missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLinkConf(tc.config)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestLinkUplink: a macvlan link leaves by the node's NIC at its annotated MTU, a bridge port by
// its cluster network's uplink. Catches: a macvlan judged by a cluster network it does not use
// (no uplink: broken), the NIC's MTU not read.
func TestLinkUplink(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		cluster.NICMTUAnnotationPrefix + cluster.LabNIC: "1400", cluster.UplinkMTUAnnotationPrefix + "migration": "9000"}}}
	if got := LinkUplink(n, Link{Master: cluster.LabNIC}); got != (Uplink{Carried: true, MTU: 1400}) {
		t.Errorf("macvlan over %s: %+v", cluster.LabNIC, got)
	}
	if got := LinkUplink(n, Link{Master: "ens6"}); got.Carried {
		t.Errorf("macvlan over a NIC the node lacks: %+v", got)
	}
	if got := LinkUplink(n, Link{BridgeConf: BridgeConf{Bridge: "migration-br"}}); got.Carried {
		t.Errorf("bridge port of a cluster network the node does not carry: %+v", got)
	}
}
