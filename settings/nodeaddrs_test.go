package settings

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// withAddrs gives node n the addresses (type, address pairs).
func withAddrs(n *corev1.Node, kv ...string) *corev1.Node {
	for i := 0; i+1 < len(kv); i += 2 {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(kv[i]), Address: kv[i+1]})
	}
	return n
}

// TestNodeAddressesInRange: a range that may assign a node's own InternalIP or ExternalIP is
// refused on range, naming the node and the exclude that fixes it; an address the range never
// assigns (excluded, its first or last, outside, a hostname) is not.
// Catches: whereabouts handing a node's address to a virt-handler (accepted today before this
// rule), an excluded address still refused, the network or broadcast address refused.
func TestNodeAddressesInRange(t *testing.T) {
	nodes := func(kv ...string) *Cluster {
		return &Cluster{Nodes: []*corev1.Node{withAddrs(node("n-1", ClusterNetworkLabelPrefix+"migration", "true"), kv...)}}
	}
	for _, tc := range []struct {
		name, raw string
		cl        *Cluster
		refused   string // a substring of the range error, "" when admitted
	}{
		{"InternalIP inside", `{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, nodes("InternalIP", "192.168.0.11"),
			`192.168.0.11 (InternalIP of node n-1); pick a range outside the nodes' network, or exclude them ("exclude": ["192.168.0.11/32"])`},
		{"ExternalIP inside, IPv6", `{"clusterNetwork":"migration","range":"fd00:10::/64"}`, nodes("ExternalIP", "fd00:10::7"), "fd00:10::7 (ExternalIP of node n-1)"},
		{"excluded", `{"clusterNetwork":"migration","range":"192.168.0.0/24","exclude":["192.168.0.0/28"]}`, nodes("InternalIP", "192.168.0.11"), ""},
		{"the network address", `{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, nodes("InternalIP", "192.168.0.0"), ""},
		{"the last address", `{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, nodes("InternalIP", "192.168.0.255"), ""},
		{"outside", `{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, nodes("InternalIP", "192.168.1.11"), ""},
		{"a hostname address", `{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, nodes("Hostname", "192.168.0.11"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMigrationNetwork(mustParse(t, tc.raw), tc.cl, field.NewPath("value"))
			var got string
			for _, e := range errs {
				if e.Field == "value.range" {
					got = e.Error()
				}
			}
			if (got != "") != (tc.refused != "") || !strings.Contains(got, tc.refused) {
				t.Errorf("range error %q, want one holding %q; all:\n%s", got, tc.refused, dumpErrs(errs))
			}
		})
	}
}

// TestManagementVLAN: on the mgmt cluster network VLAN 0 and 1 are refused on vlan, as Harvester
// refuses them; other VLANs there, and VLAN 0 or 1 elsewhere, are not.
// Catches: {"clusterNetwork":"mgmt","vlan":1} accepted (migranet did, Harvester's validator does not).
func TestManagementVLAN(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		refused bool
	}{
		{`{"clusterNetwork":"mgmt","vlan":1,"range":"192.168.0.0/24"}`, true},
		{`{"clusterNetwork":"mgmt","range":"192.168.0.0/24"}`, true},
		{`{"clusterNetwork":"mgmt","vlan":2,"range":"192.168.0.0/24"}`, false},
		{`{"clusterNetwork":"migration","vlan":1,"range":"192.168.0.0/24"}`, false},
		{`{"clusterNetwork":"migration","range":"192.168.0.0/24"}`, false},
	} {
		_, errs, _ := ParseAndValidateMigrationNetwork(tc.raw, nil, field.NewPath("value"))
		got := len(errs) == 1 && errs[0].Field == "value.vlan" && strings.Contains(errs[0].Detail, "management network")
		if got != tc.refused || (!tc.refused && len(errs) > 0) {
			t.Errorf("%s: refused %v, want %v:\n%s", tc.raw, got, tc.refused, dumpErrs(errs))
		}
	}
}
