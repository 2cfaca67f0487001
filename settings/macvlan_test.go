package settings

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// macvlanValue is the macvlan example of docs/settings-and-admission.md.
const macvlanValue = `{"macvlan":{"master":"ens5","mode":"bridge"},"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

// TestMacvlanValue: the value's macvlan shape parses to the typed Network, each mistake is refused
// on its field with the fix. Catches: a master the kernel would refuse let through (the plugin then
// fails every ADD), passthru or an unknown mode accepted, a vlan silently dropped, a macvlan value
// required to name a cluster network, a bridge value no longer required to.
func TestMacvlanValue(t *testing.T) {
	mv := func(master, rest string) string {
		return `{"macvlan":{"master":"` + master + `"},"range":"10.0.0.0/24"` + rest + `}`
	}
	tests := []struct {
		name, raw string
		want      *Network
		errs      []wantErr
	}{
		{name: "the example", raw: macvlanValue, want: &Network{Range: pfx("192.168.100.0/24"), Exclude: Excludes{pfx("192.168.100.1/32")},
			MTU: 9000, Macvlan: &Macvlan{Master: "ens5", Mode: "bridge"}}},
		{name: "mode omitted is bridge", raw: mv("ens5", ""), want: &Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "ens5", Mode: "bridge"}}},
		{name: "private", raw: `{"macvlan":{"master":"bond0","mode":"private"},"range":"10.0.0.0/24"}`,
			want: &Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "bond0", Mode: "private"}}},
		{name: "vepa on a VLAN interface, with a cluster network selecting nodes",
			raw:  `{"macvlan":{"master":"ens5.100","mode":"vepa"},"clusterNetwork":"migration","range":"10.0.0.0/24"}`,
			want: &Network{ClusterNetwork: "migration", Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "ens5.100", Mode: "vepa"}}},
		{name: "vlan 0 is no tag", raw: mv("ens5", `,"vlan":0`), want: &Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "ens5", Mode: "bridge"}}},
		{name: "15 bytes is the longest name", raw: mv("enp129s0f1.4094", ""),
			want: &Network{Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "enp129s0f1.4094", Mode: "bridge"}}},
		{name: "mgmt as the cluster network is only a node selector: no VLAN rule", raw: `{"macvlan":{"master":"eth1"},"clusterNetwork":"mgmt","range":"10.0.0.0/24"}`,
			want: &Network{ClusterNetwork: "mgmt", Range: pfx("10.0.0.0/24"), Macvlan: &Macvlan{Master: "eth1", Mode: "bridge"}}},

		{name: "no master", raw: `{"macvlan":{},"range":"10.0.0.0/24"}`, errs: []wantErr{req("value.macvlan.master", "default route", "ens5")}},
		{name: "16 bytes", raw: mv("enp129s0f1.40941", ""), errs: []wantErr{inv("value.macvlan.master", "16 bytes", "at most 15")}},
		{name: "dot", raw: mv(".", ""), errs: []wantErr{inv("value.macvlan.master", "not an interface name")}},
		{name: "dot dot", raw: mv("..", ""), errs: []wantErr{inv("value.macvlan.master", "not an interface name")}},
		{name: "slash", raw: mv("ens5/1", ""), errs: []wantErr{inv("value.macvlan.master", "'/'")}},
		{name: "colon (an alias, not an interface)", raw: mv("ens5:1", ""), errs: []wantErr{inv("value.macvlan.master", "':'")}},
		{name: "space", raw: mv("ens 5", ""), errs: []wantErr{inv("value.macvlan.master", "whitespace")}},
		{name: "NUL", raw: mv(`ens\u00005`, ""), errs: []wantErr{inv("value.macvlan.master", "control character")}},
		{name: "master not a string", raw: `{"macvlan":{"master":5},"range":"10.0.0.0/24"}`, errs: []wantErr{typ("value.macvlan.master", `"ens5"`)}},
		{name: "passthru", raw: `{"macvlan":{"master":"ens5","mode":"passthru"},"range":"10.0.0.0/24"}`,
			errs: []wantErr{inv("value.macvlan.mode", "one macvlan", `use "bridge"`)}},
		{name: "unknown mode", raw: `{"macvlan":{"master":"ens5","mode":"Bridge"},"range":"10.0.0.0/24"}`,
			errs: []wantErr{nsup("value.macvlan.mode", "not a macvlan mode", `"bridge"`)}},
		{name: "vlan with macvlan", raw: mv("ens5", `,"vlan":100`),
			errs: []wantErr{{field.ErrorTypeForbidden, "value.vlan", []string{`"ens5.100"`, "remove \"vlan\""}}}},
		{name: "unknown key in macvlan", raw: `{"macvlan":{"master":"ens5","parent":"x"},"range":"10.0.0.0/24"}`,
			errs: []wantErr{nsup("value.macvlan.parent", "unknown key of the macvlan object")}},
		{name: "macvlan not an object", raw: `{"macvlan":"ens5","range":"10.0.0.0/24"}`,
			errs: []wantErr{typ("value.macvlan", "JSON object", `{"master":"ens5","mode":"bridge"}`)}},
		{name: "invalid cluster network still judged", raw: `{"macvlan":{"master":"ens5"},"clusterNetwork":"Bad_1","range":"10.0.0.0/24"}`,
			errs: []wantErr{inv("value.clusterNetwork", "RFC 1123")}},
		{name: "range still judged", raw: mv("ens5", `,"mtu":100`), errs: []wantErr{inv("value.mtu", "576")}},
		// near miss: the bridge shape still needs its cluster network
		{name: "bridge without cluster network", raw: `{"range":"10.0.0.0/24"}`, errs: []wantErr{req("value.clusterNetwork")}},
		{name: "macvlan null is the bridge shape", raw: `{"macvlan":null,"range":"10.0.0.0/24"}`, errs: []wantErr{req("value.clusterNetwork")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, errs, _ := ParseNetwork(tc.raw, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			if d := gocmp.Diff(tc.want, n, netipEq); d != "" {
				t.Errorf("Network (-want +got):\n%s", d)
			}
			_, admission, _ := ParseAndValidateMigrationNetwork(tc.raw, nil, field.NewPath("value"))
			if dumpErrs(admission) != dumpErrs(errs) {
				t.Errorf("admission differs:\n%s", dumpErrs(admission))
			}
		})
	}
}

// TestMacvlanCanonical: a macvlan value's canonical form and hash, anchored outside migranet, and
// what does and does not change them. Catches: mode "" and "bridge" hashing apart (a restart for
// nothing), a master or mode change not reaching the hash (no rollout for a changed network), a
// macvlan value hashing like the bridge value with the same range.
func TestMacvlanCanonical(t *testing.T) {
	for _, tc := range []struct{ raw, canonical, hash string }{
		// printf '%s' '<canonical>' | sha256sum
		{macvlanValue, macvlanValue, "ac458ee6105b50075077d3da15d323cf5f82c67cbdae64c7e0443e648d77f06f"},
		{`{"range":"FD00:100::/64","clusterNetwork":"migration","macvlan":{"mode":"vepa","master":"ens5.100"},"vlan":0,"mtu":0}`,
			`{"macvlan":{"master":"ens5.100","mode":"vepa"},"clusterNetwork":"migration","range":"fd00:100::/64"}`,
			"df02be6770e0e89dcb498e0541cb7027d0158b51567b9dfe40f67f7f7745b64f"},
	} {
		n := mustNetwork(t, tc.raw)
		if got := string(n.Canonical()); got != tc.canonical {
			t.Errorf("Canonical(%s) = %s, want %s", tc.raw, got, tc.canonical)
		}
		if got := n.Hash(); got != tc.hash {
			t.Errorf("Hash(%s) = %s, want %s", tc.raw, got, tc.hash)
		}
	}
	base := mustNetwork(t, macvlanValue).Hash()
	for _, same := range []string{
		`{"macvlan":{"master":"ens5"},"range":"192.168.100.0/24","exclude":["192.168.100.1"],"mtu":9000}`,
		"{ \"mtu\": 9000, \"exclude\": [\"192.168.100.1/32\"], \"range\": \"192.168.100.0/24\", \"macvlan\": { \"mode\": \"bridge\", \"master\": \"ens5\" } }",
	} {
		if got := mustNetwork(t, same).Hash(); got != base {
			t.Errorf("%s hashes %s, want %s", same, got, base)
		}
	}
	for _, other := range []string{
		`{"macvlan":{"master":"ens6"},"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
		`{"macvlan":{"master":"ens5","mode":"private"},"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
		`{"macvlan":{"master":"ens5"},"clusterNetwork":"migration","range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
		`{"clusterNetwork":"ens5","range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
	} {
		if mustNetwork(t, other).Hash() == base {
			t.Errorf("%s hashes like %s", other, macvlanValue)
		}
	}
}

// TestMacvlanSummary: the status column of a macvlan network. Catches: a summary that reads like
// a bridge network (a cluster network named after the master, "untagged").
func TestMacvlanSummary(t *testing.T) {
	for raw, want := range map[string]string{
		macvlanValue: "macvlan ens5 192.168.100.0/24 (-1) mtu 9000",
		`{"macvlan":{"master":"ens5.100","mode":"vepa"},"clusterNetwork":"migration","range":"fd00::/64"}`: "macvlan ens5.100 vepa on migration fd00::/64",
	} {
		if got := mustNetwork(t, raw).Summary(); got != want {
			t.Errorf("Summary(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestMacvlanRender: the NAD of a macvlan value, written by hand as the macvlan plugin
// (containernetworking/plugins v1.9.1 NetConf) and whereabouts read it, with the same metadata
// as a bridge network's. Catches: a bridge config rendered for a macvlan value, the mode left
// out, the metadata (hash, role, managed-by, system network) missing.
func TestMacvlanRender(t *testing.T) {
	got := RenderNAD(EffectiveOf(mustNetwork(t, macvlanValue)), "kubevirt")
	want := expectedNAD("ac458ee6105b50075077d3da15d323cf5f82c67cbdae64c7e0443e648d77f06f",
		`{"cniVersion":"0.3.1","type":"macvlan","master":"ens5","mode":"bridge","mtu":9000,`+
			`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`)
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("RenderNAD (-want +got):\n%s", d)
	}
	if m := MTUOfConfig(got.Spec.Config); m != 9000 {
		t.Errorf("MTUOfConfig = %d", m)
	}
	noMTU := NADConfig(mustNetwork(t, `{"macvlan":{"master":"bond0","mode":"private"},"range":"10.0.0.0/24"}`))
	if want := `{"cniVersion":"0.3.1","type":"macvlan","master":"bond0","mode":"private","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`; noMTU != want {
		t.Errorf("NADConfig = %s, want %s", noMTU, want)
	}
}

// TestMacvlanAgainstCluster: without a cluster network every eligible node counts and none is
// missing a label; with one, the label still selects. Catches: a macvlan value refused because
// nodes lack a Harvester label it never asked for; a macvlan value's cluster network not checked;
// capacity not counted for macvlan.
func TestMacvlanAgainstCluster(t *testing.T) {
	bare := []*corev1.Node{node("a"), node("b"), node("c")}
	tests := []struct {
		name, raw string
		cl        *Cluster
		errs      []wantErr
	}{
		{name: "no cluster network: unlabelled nodes are fine", raw: macvlanValue, cl: &Cluster{Nodes: bare}},
		{name: "with a cluster network: its label is needed",
			raw:  `{"macvlan":{"master":"ens5"},"clusterNetwork":"migration","range":"10.0.0.0/24"}`,
			cl:   &Cluster{Nodes: append(attached("n", "migration", 1), bare...)},
			errs: []wantErr{inv("value.clusterNetwork", "missing on 3 of 4 eligible nodes")}},
		{name: "capacity counts every eligible node", raw: `{"macvlan":{"master":"ens5"},"range":"10.0.0.0/30"}`,
			cl: &Cluster{Nodes: bare}, errs: []wantErr{inv("value.range", "2 usable addresses", "3 eligible nodes")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMigrationNetwork(mustParse(t, tc.raw), tc.cl, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
		})
	}
}

// TestValidateInterfaceName at the kernel's limits (dev_valid_name). Catches an off-by-one on the
// length, a name the kernel refuses let through.
func TestValidateInterfaceName(t *testing.T) {
	for name, ok := range map[string]bool{
		"eth0": true, "ens5.100": true, "bond0": true, "a": true, strings.Repeat("x", 15): true, "br-ex": true, "vlan@x": true,
		"": false, strings.Repeat("x", 16): false, ".": false, "..": false, "a/b": false, "a:b": false, "a b": false,
		"a\tb": false, "a\nb": false, "a\x7fb": false, "a\x00": false,
	} {
		if errs := ValidateInterfaceName(name, field.NewPath("m")); (len(errs) == 0) != ok {
			t.Errorf("%q: errors %v, want ok %v", name, errs, ok)
		}
	}
}
