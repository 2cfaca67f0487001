package settings

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mn renders a value from its parts; extra is spliced in verbatim (e.g. `,"mtu":9000`).
func mn(cn string, vlan int, rng string, excl []string, extra string) string {
	ex := ""
	if excl != nil {
		q := make([]string, len(excl))
		for i, e := range excl {
			q[i] = fmt.Sprintf("%q", e)
		}
		ex = `,"exclude":[` + strings.Join(q, ",") + `]`
	}
	return fmt.Sprintf(`{"clusterNetwork":%q,"vlan":%d,"range":%q%s%s}`, cn, vlan, rng, ex, extra)
}

func TestValidateMigrationNetworkRules(t *testing.T) {
	three := &Cluster{Nodes: attached("n", "migration", 3)}
	two := &Cluster{Nodes: attached("n", "migration", 2)}
	v4 := "192.168.100.0/24"
	v6 := "fd00:100::/64"
	tests := []struct {
		name  string
		raw   string
		cl    *Cluster
		errs  []wantErr
		warns []string
	}{
		{name: "issue example", raw: validValue, cl: three},
		// vlan
		{name: "vlan 0 untagged", raw: mn("migration", 0, v4, nil, ""), cl: three},
		{name: "vlan 4094", raw: mn("migration", 4094, v4, nil, ""), cl: three},
		{name: "vlan 4095", raw: mn("migration", 4095, v4, nil, ""), cl: three,
			errs: []wantErr{inv("value.vlan", "between 0 (untagged) and 4094")}},
		{name: "vlan -1", raw: mn("migration", -1, v4, nil, ""), cl: three, errs: []wantErr{inv("value.vlan", "-1")}},
		// mtu
		{name: "mtu 575", raw: mn("migration", 1, v4, nil, `,"mtu":575`), errs: []wantErr{inv("value.mtu", "575", "0 (inherit")}},
		{name: "mtu 576", raw: mn("migration", 1, v4, nil, `,"mtu":576`)},
		{name: "mtu 9216", raw: mn("migration", 1, v4, nil, `,"mtu":9216`)},
		{name: "mtu 9217", raw: mn("migration", 1, v4, nil, `,"mtu":9217`), errs: []wantErr{inv("value.mtu", "9217")}},
		{name: "mtu negative", raw: mn("migration", 1, v4, nil, `,"mtu":-1`), errs: []wantErr{inv("value.mtu")}},
		{name: "ipv6 mtu 1279", raw: mn("migration", 1, v6, nil, `,"mtu":1279`), errs: []wantErr{inv("value.mtu", "IPv6", "1280")}},
		{name: "ipv6 mtu 1280", raw: mn("migration", 1, v6, nil, `,"mtu":1280`)},
		{name: "ipv6 mtu 576", raw: mn("migration", 1, v6, nil, `,"mtu":576`), errs: []wantErr{inv("value.mtu", "IPv6")}},
		{name: "ipv6 mtu 0 inherits", raw: mn("migration", 1, v6, nil, `,"mtu":0`)},
		// range
		{name: "ipv4 /30 two nodes", raw: mn("migration", 1, "10.0.0.0/30", nil, ""), cl: two,
			warns: []string{"value.range: only 2 usable addresses for 2 eligible nodes", "3 or more recommended"}},
		{name: "ipv4 /31", raw: mn("migration", 1, "10.0.0.0/31", nil, ""),
			errs: []wantErr{inv("value.range", "/31 leaves no assignable address", "/30 or shorter", `"10.0.0.0/30"`)}},
		{name: "ipv4 /32", raw: mn("migration", 1, "10.0.0.1/32", nil, ""), errs: []wantErr{inv("value.range", "/32")}},
		{name: "ipv6 /126 two nodes", raw: mn("migration", 1, "fd00::/126", nil, ""), cl: two,
			warns: []string{"only 2 usable addresses for 2 eligible nodes"}},
		{name: "ipv6 /126 three nodes", raw: mn("migration", 1, "fd00::/126", nil, ""), cl: three,
			errs: []wantErr{inv("value.range", "has 2 usable addresses", "4 in the range", "3 eligible nodes")}},
		{name: "ipv6 /127", raw: mn("migration", 1, "fd00::/127", nil, ""), errs: []wantErr{inv("value.range", "/126 or shorter")}},
		{name: "host bits did you mean", raw: mn("migration", 1, "192.168.1.5/24", nil, ""),
			errs: []wantErr{inv("value.range", `did you mean "192.168.1.0/24"?`)}},
		{name: "ipv6 host bits", raw: mn("migration", 1, "fd00::1/64", nil, ""),
			errs: []wantErr{inv("value.range", `did you mean "fd00::/64"?`)}},
		{name: "host bits and too long", raw: mn("migration", 1, "10.0.0.5/31", nil, ""),
			errs: []wantErr{inv("value.range", `"10.0.0.4/31"`), inv("value.range", "/31")}},
		{name: "range bare ip", raw: mn("migration", 1, "192.168.1.7", nil, ""),
			errs: []wantErr{inv("value.range", "single address", `"192.168.1.0/24"`)}},
		{name: "range garbage", raw: mn("migration", 1, "192.168.1.0/33", nil, ""), errs: []wantErr{inv("value.range", "not a valid CIDR")}},
		{name: "range missing", raw: `{"clusterNetwork":"migration"}`, errs: []wantErr{req("value.range")}},
		{name: "range ipv4-mapped", raw: mn("migration", 1, "::ffff:10.0.0.0/120", nil, ""), errs: []wantErr{inv("value.range", "IPv4-mapped")}},
		{name: "range ipv6 uppercase", raw: mn("migration", 1, "FD00:100::/64", nil, ""), cl: three},
		{name: "range wide ipv4", raw: mn("migration", 1, "10.0.0.0/8", nil, ""), cl: three},
		// excludes
		{name: "exclude touching both edges", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.0.252/30", "10.0.0.0/30"}, ""), cl: three},
		{name: "exclude network and broadcast addresses", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.0.0", "10.0.0.255/32"}, ""), cl: three},
		{name: "exclude equal to range", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.0.0/24"}, ""),
			errs: []wantErr{inv("value.exclude[0]", "covers the whole range 10.0.0.0/24")}},
		{name: "exclude wider than range", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.0.0/16"}, ""),
			errs: []wantErr{inv("value.exclude[0]", "covers the whole range")}},
		{name: "exclude outside", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.1.0/28"}, ""),
			errs: []wantErr{inv("value.exclude[0]", "outside range 10.0.0.0/24")}},
		{name: "exclude bare ips v4 and v6", raw: mn("migration", 1, v6, []string{"fd00:100::1", "fd00:100::2"}, ""), cl: three},
		{name: "exclude mixed family", raw: mn("migration", 1, v4, []string{"192.168.100.1", "fd00::1"}, ""),
			errs: []wantErr{inv("value.exclude[1]", "is IPv6 but range 192.168.100.0/24 is IPv4")}},
		{name: "exclude ipv4 in ipv6 range", raw: mn("migration", 1, v6, []string{"10.0.0.0/24"}, ""),
			errs: []wantErr{inv("value.exclude[0]", "is IPv4 but range")}},
		{name: "exclude duplicate bare and /32", raw: mn("migration", 1, v4, []string{"192.168.100.5", "192.168.100.9", "192.168.100.5/32"}, ""),
			errs: []wantErr{dup("value.exclude[2]", "duplicates exclude[0]", `"192.168.100.5"`)}},
		{name: "exclude non-canonical", raw: mn("migration", 1, v4, []string{"192.168.100.5/30"}, ""),
			errs: []wantErr{inv("value.exclude[0]", `did you mean "192.168.100.4/30"`, `"192.168.100.5"`)}},
		{name: "exclude garbage", raw: mn("migration", 1, v4, []string{"192.168.100.x"}, ""),
			errs: []wantErr{inv("value.exclude[0]", "not a valid CIDR")}},
		{name: "exclude zone", raw: mn("migration", 1, v6, []string{"fd00:100::1%eth0"}, ""),
			errs: []wantErr{inv("value.exclude[0]")}},
		{name: "overlap of non-adjacent entries", cl: three,
			raw:  mn("migration", 1, v4, []string{"192.168.100.0/25", "192.168.100.200", "192.168.100.210/31", "192.168.100.64/26"}, ""),
			errs: []wantErr{inv("value.exclude[3]", "overlaps exclude[0]", "192.168.100.64/26 lies inside 192.168.100.0/25")}},
		{name: "overlap wider entry later", raw: mn("migration", 1, v4, []string{"192.168.100.9", "192.168.100.0/28"}, ""),
			errs: []wantErr{inv("value.exclude[1]", "overlaps exclude[0]", "keep only 192.168.100.0/28")}},
		{name: "overlap nested three deep", raw: mn("migration", 1, v4, []string{"192.168.100.0/25", "192.168.100.0/26", "192.168.100.0/27"}, ""),
			errs: []wantErr{inv("value.exclude[1]", "exclude[0]"), inv("value.exclude[2]", "exclude[0]")}},
		{name: "ipv6 /64 with excludes", raw: mn("migration", 1, v6, []string{"fd00:100::/120", "fd00:100::ffff:0/112", "fd00:100:0:0:ffff:ffff:ffff:ffff"}, ""), cl: three},
		{name: "excludes leave nothing", raw: mn("migration", 1, "10.0.0.0/30", []string{"10.0.0.1", "10.0.0.2"}, ""),
			errs: []wantErr{inv("value.exclude", "cover every assignable address")}},
		{name: "excludes of two halves leave nothing", raw: mn("migration", 1, "10.0.0.0/24", []string{"10.0.0.0/25", "10.0.0.128/25"}, ""), cl: three,
			errs: []wantErr{inv("value.exclude", "cover every assignable address")}},
		// clusterNetwork
		{name: "clusterNetwork missing", raw: `{"range":"10.0.0.0/24"}`, cl: three, errs: []wantErr{req("value.clusterNetwork")}},
		{name: "clusterNetwork upper case", raw: mn("Migration", 1, v4, nil, ""), errs: []wantErr{inv("value.clusterNetwork", "RFC 1123")}},
		{name: "clusterNetwork 12 chars", raw: mn("abcdefghijkl", 1, v4, nil, "")},
		{name: "clusterNetwork 13 chars", raw: mn("abcdefghijklm", 1, v4, nil, ""),
			errs: []wantErr{inv("value.clusterNetwork", `"abcdefghijklm-br" is 16 characters`, "at most 15", "at most 12")}},
		{name: "clusterNetwork 64 chars", raw: mn(strings.Repeat("a", 64), 1, v4, nil, ""),
			errs: []wantErr{inv("value.clusterNetwork", "63"), inv("value.clusterNetwork", "Linux")}},
		{name: "clusterNetwork with slash", raw: mn("a/b", 1, v4, nil, ""), errs: []wantErr{inv("value.clusterNetwork")}},
		// everything at once
		{name: "all problems at once", raw: mn("Bad_Name", 5000, "10.0.0.5/24", []string{"10.1.0.0/24", "x"}, `,"mtu":100`), cl: three,
			errs: []wantErr{inv("value.clusterNetwork"), inv("value.vlan"), inv("value.range", `did you mean "10.0.0.0/24"`),
				inv("value.mtu"), inv("value.exclude[0]", "outside"), inv("value.exclude[1]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, tc.raw)
			errs, warns := ValidateMigrationNetwork(m, tc.cl, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			checkWarnings(t, warns, tc.warns)
		})
	}
}

// checkWarnings wants exactly one warning containing every substring of want, or none if want is empty.
func checkWarnings(t *testing.T, got []string, want []string) {
	t.Helper()
	if len(want) == 0 {
		if len(got) != 0 {
			t.Errorf("unexpected warnings: %q", got)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("want one warning containing %q, got %q", want, got)
	}
	for _, w := range want {
		if !strings.Contains(got[0], w) {
			t.Errorf("warning %q does not contain %q", got[0], w)
		}
	}
}

func TestValidateNilIsDisabled(t *testing.T) {
	errs, warns := ValidateMigrationNetwork(nil, &Cluster{}, field.NewPath("value"))
	if errs != nil || warns != nil {
		t.Errorf("nil value: %v %v", errs, warns)
	}
}

func TestValidateClusterDependent(t *testing.T) {
	const cn = "migration"
	lbl := ClusterNetworkLabelPrefix + cn
	many := func(n int) []*corev1.Node {
		var out []*corev1.Node
		for i := range n {
			out = append(out, node(fmt.Sprintf("bare-%02d", i)))
		}
		return out
	}
	tests := []struct {
		name  string
		raw   string
		cl    *Cluster
		errs  []wantErr
		warns []string
	}{
		{name: "no cluster skips node checks", raw: mn(cn, 1, "10.0.0.0/30", nil, "")},
		{name: "missing on one node", raw: validValue,
			cl:   &Cluster{Nodes: append(attached("n", cn, 2), node("lonely"))},
			errs: []wantErr{inv("value.clusterNetwork", "missing on 1 of 3 eligible nodes", ": lonely;", lbl+"=true")}},
		{name: "label not true", raw: validValue,
			cl:   &Cluster{Nodes: append(attached("n", cn, 2), node("off", lbl, "false"))},
			errs: []wantErr{inv("value.clusterNetwork", "1 of 3", "off")}},
		{name: "witness node is not eligible", raw: mn(cn, 1, "10.0.0.0/30", nil, ""),
			cl:    &Cluster{Nodes: append(attached("n", cn, 2), node("witness", WitnessLabel, "true"))},
			warns: []string{"2 usable addresses for 2 eligible nodes"}},
		{name: "witness label with any value", raw: validValue,
			cl: &Cluster{Nodes: append(attached("n", cn, 2), node("witness", WitnessLabel, ""))}},
		{name: "node outside nodePlacement is not eligible", raw: validValue,
			cl: &Cluster{NodeSelector: map[string]string{"virt": "yes"}, Nodes: []*corev1.Node{
				node("a", lbl, "true", "virt", "yes"), node("b", "virt", "no"), node("c")}}},
		{name: "node inside nodePlacement without network", raw: validValue,
			cl: &Cluster{NodeSelector: map[string]string{"virt": "yes", "zone": "a"}, Nodes: []*corev1.Node{
				node("a", lbl, "true", "virt", "yes", "zone", "a"), node("b", "virt", "yes", "zone", "a"), node("c", "virt", "yes")}},
			errs: []wantErr{inv("value.clusterNetwork", "missing on 1 of 2 eligible nodes", ": b;")}},
		{name: "more than ten nodes missing", raw: validValue,
			cl: &Cluster{Nodes: append(many(12), attached("ok", cn, 1)...)},
			errs: []wantErr{inv("value.clusterNetwork", "missing on 12 of 13 eligible nodes",
				"bare-00, bare-01, bare-02, bare-03, bare-04, bare-05, bare-06, bare-07, bare-08, bare-09 and 2 more;")}},
		{name: "exactly ten missing lists all", raw: validValue,
			cl:   &Cluster{Nodes: many(10)},
			errs: []wantErr{inv("value.clusterNetwork", "bare-00", "bare-09;")}},
		{name: "nil nodes are ignored", raw: validValue, cl: &Cluster{Nodes: []*corev1.Node{nil, node("a", lbl, "true"), nil}}},
		{name: "invalid clusterNetwork skips presence check", raw: mn("Bad", 1, "10.0.0.0/24", nil, ""),
			cl: &Cluster{Nodes: many(3)}, errs: []wantErr{inv("value.clusterNetwork", "RFC 1123")}},
		// capacity: /29 has 6 usable addresses
		{name: "capacity exactly equal to nodes", raw: mn(cn, 1, "10.0.0.0/29", nil, ""), cl: &Cluster{Nodes: attached("n", cn, 6)},
			warns: []string{"only 6 usable addresses for 6 eligible nodes", "8 or more recommended"}},
		{name: "capacity one short", raw: mn(cn, 1, "10.0.0.0/29", nil, ""), cl: &Cluster{Nodes: attached("n", cn, 7)},
			errs: []wantErr{inv("value.range", "has 6 usable addresses (8 in the range, minus the first and last and 0 excluded)", "7 eligible nodes")}},
		{name: "capacity counts excludes", raw: mn(cn, 1, "10.0.0.0/28", []string{"10.0.0.8/29"}, ""), cl: &Cluster{Nodes: attached("n", cn, 8)},
			errs: []wantErr{inv("value.range", "has 7 usable addresses (16 in the range, minus the first and last and 7 excluded)", "8 eligible")}},
		{name: "capacity ignores witness", raw: mn(cn, 1, "10.0.0.0/29", nil, ""),
			cl:    &Cluster{Nodes: append(attached("n", cn, 6), node("w", WitnessLabel, "true"))},
			warns: []string{"6 usable addresses for 6 eligible nodes"}},
		// headroom boundary with 10 nodes: /28 has 14 usable; 12 is exactly 1.2×10, 11 is below.
		{name: "headroom exactly 20%", raw: mn(cn, 1, "10.0.0.0/28", []string{"10.0.0.1", "10.0.0.2"}, ""), cl: &Cluster{Nodes: attached("n", cn, 10)}},
		{name: "headroom below 20%", raw: mn(cn, 1, "10.0.0.0/28", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, ""), cl: &Cluster{Nodes: attached("n", cn, 10)},
			warns: []string{"value.range: only 11 usable addresses for 10 eligible nodes", "12 or more recommended"}},
		{name: "no eligible nodes", raw: validValue, cl: &Cluster{Nodes: []*corev1.Node{node("w", WitnessLabel, "")}}},
		{name: "ipv6 /64 capacity", raw: mn(cn, 1, "fd00::/64", []string{"fd00::/65"}, ""), cl: &Cluster{Nodes: attached("n", cn, 50)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := ValidateMigrationNetwork(mustParse(t, tc.raw), tc.cl, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			checkWarnings(t, warns, tc.warns)
		})
	}
}

func TestEligibleAndHasClusterNetwork(t *testing.T) {
	if Eligible(nil, nil) || HasClusterNetwork(nil, "m") {
		t.Error("nil node must be neither eligible nor attached")
	}
	n := node("a", ClusterNetworkLabelPrefix+"m", "true", "zone", "x")
	if !Eligible(n, nil) || !Eligible(n, map[string]string{"zone": "x"}) || Eligible(n, map[string]string{"zone": "y"}) {
		t.Error("selector matching is wrong")
	}
	if Eligible(n, map[string]string{"other": ""}) {
		t.Error("a selector key the node lacks must not match, even with an empty value")
	}
	if !HasClusterNetwork(n, "m") || HasClusterNetwork(n, "") || HasClusterNetwork(n, "n") {
		t.Error("HasClusterNetwork is wrong")
	}
	if got := (&Cluster{Nodes: []*corev1.Node{node("b"), node("a"), node("w", WitnessLabel, "true")}}).EligibleNodes(); strings.Join(got, ",") != "a,b" {
		t.Errorf("EligibleNodes = %v", got)
	}
}

// TestExcludeErrorsInIndexOrder: exclude errors come in the order of the entries they are about,
// though overlaps are found after the per-entry checks (the API returns the causes in this order).
func TestExcludeErrorsInIndexOrder(t *testing.T) {
	rng, errs := validateRange("10.0.0.0/24", field.NewPath("value", "range"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// [0] and [1] overlap (reported on [1]); [2] is outside the range; [10] too.
	excl := []string{"10.0.0.0/25", "10.0.0.0/26", "10.9.9.9", "10.0.0.200", "x", "10.0.0.210", "10.0.0.220", "10.0.0.230", "10.0.0.240", "10.0.0.250", "10.9.9.10"}
	_, _, errs = validateExcludes(excl, rng, field.NewPath("value", "exclude"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"value.exclude[1]", "value.exclude[2]", "value.exclude[4]", "value.exclude[10]"}
	if strings.Join(want, " ") != strings.Join(got, " ") {
		t.Errorf("error fields %q, want %q", got, want)
	}
}
