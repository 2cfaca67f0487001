package settings

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const validValue = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

func TestParseMigrationNetwork(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *MigrationNetwork
		wantNil bool
		errs    []wantErr
	}{
		{name: "empty is disabled", raw: "", wantNil: true},
		{name: "whitespace is disabled", raw: " \n\t ", wantNil: true},
		{name: "full value", raw: validValue, want: &MigrationNetwork{
			ClusterNetwork: "migration", VLAN: 100, Range: "192.168.100.0/24", Exclude: []string{"192.168.100.1/32"}, MTU: 9000}},
		{name: "nulls read as omitted", raw: `{"clusterNetwork":"m","vlan":null,"range":"10.0.0.0/24","exclude":null,"mtu":null}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"}},
		{name: "unknown field", raw: `{"clusterNetwork":"m","range":"10.0.0.0/24","vlans":3}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{nsup("value.vlans", "unknown key", `"vlan"`)}},
		{name: "key case matters", raw: `{"ClusterNetwork":"m","range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{Range: "10.0.0.0/24"},
			errs: []wantErr{nsup("value.ClusterNetwork", `did you mean "clusterNetwork"`)}},
		{name: "vlan as string", raw: `{"clusterNetwork":"m","vlan":"100","range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{typ("value.vlan", "not a string", "drop the quotes: 100")}},
		{name: "vlan fraction", raw: `{"clusterNetwork":"m","vlan":1.5,"range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{typ("value.vlan", "whole number")}},
		{name: "mtu exponent", raw: `{"clusterNetwork":"m","mtu":9e3,"range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{typ("value.mtu", "whole number")}},
		{name: "vlan overflow", raw: `{"clusterNetwork":"m","vlan":123456789012345678901234567890,"range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{inv("value.vlan", "out of range")}},
		{name: "clusterNetwork as number", raw: `{"clusterNetwork":7,"range":"10.0.0.0/24"}`,
			want: &MigrationNetwork{Range: "10.0.0.0/24"},
			errs: []wantErr{typ("value.clusterNetwork", "JSON string, not a number")}},
		{name: "range as bool", raw: `{"clusterNetwork":"m","range":true}`,
			want: &MigrationNetwork{ClusterNetwork: "m"},
			errs: []wantErr{typ("value.range", "not a boolean")}},
		{name: "exclude as string", raw: `{"clusterNetwork":"m","range":"10.0.0.0/24","exclude":"10.0.0.1"}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{typ("value.exclude", "array of strings")}},
		{name: "exclude element wrong type keeps indices", raw: `{"clusterNetwork":"m","range":"10.0.0.0/24","exclude":[1,"10.0.0.1",null]}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24", Exclude: []string{"1", "10.0.0.1", "null"}},
			errs: []wantErr{typ("value.exclude[0]", "not a number"), typ("value.exclude[2]", "not null")}},
		{name: "duplicate keys", raw: `{"clusterNetwork":"m","vlan":1,"range":"10.0.0.0/24","vlan":2,"vlan":3}`,
			want: &MigrationNetwork{ClusterNetwork: "m", VLAN: 1, Range: "10.0.0.0/24"},
			errs: []wantErr{dup("value.vlan", "second time"), dup("value.vlan", "third time")}},
		{name: "trailing data", raw: validValue + ` x`,
			want: &MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: "192.168.100.0/24", Exclude: []string{"192.168.100.1/32"}, MTU: 9000},
			errs: []wantErr{inv("value", "unexpected data after the JSON object", `"x"`)}},
		{name: "second object", raw: `{"clusterNetwork":"m","range":"10.0.0.0/24"} {}`,
			want: &MigrationNetwork{ClusterNetwork: "m", Range: "10.0.0.0/24"},
			errs: []wantErr{inv("value", "exactly one object")}},
		{name: "truncated", raw: `{"clusterNetwork":"m","range":`, wantNil: true,
			errs: []wantErr{inv("value", "ends early")}},
		{name: "syntax error", raw: `{"clusterNetwork":"m",,}`, wantNil: true,
			errs: []wantErr{inv("value", "not valid JSON", "at byte")}},
		{name: "missing comma", raw: `{"clusterNetwork":"m" "range":"10.0.0.0/24"}`, wantNil: true,
			errs: []wantErr{inv("value", "not valid JSON")}},
		{name: "array", raw: `["migration"]`, wantNil: true, errs: []wantErr{inv("value", "JSON object", "not an array")}},
		{name: "null", raw: `null`, wantNil: true, errs: []wantErr{inv("value", "not null")}},
		{name: "number", raw: `42`, wantNil: true, errs: []wantErr{inv("value", "not a number")}},
		{name: "stray close", raw: `}`, wantNil: true, errs: []wantErr{inv("value", "not valid JSON")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseMigrationNetwork(tc.raw, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("want nil value, got %+v", got)
				}
				return
			}
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("value (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseAndValidateReportsEachFieldOnce(t *testing.T) {
	raw := `{"clusterNetwork":7,"vlan":"100","range":false,"exclude":[5],"mtu":100,"vlan":5000}`
	_, errs, _ := ParseAndValidateMigrationNetwork(raw, nil, field.NewPath("value"))
	checkErrs(t, errs, []wantErr{
		typ("value.clusterNetwork"), typ("value.vlan"), typ("value.range"), typ("value.exclude[0]"),
		dup("value.vlan"), inv("value.mtu", "between 576 and 9216"),
	})
}

func TestParseAndValidateKeepsCheckingDuplicatedKey(t *testing.T) {
	raw := `{"clusterNetwork":"migration","vlan":5000,"range":"10.0.0.0/24","vlan":1}`
	_, errs, _ := ParseAndValidateMigrationNetwork(raw, nil, field.NewPath("value"))
	checkErrs(t, errs, []wantErr{dup("value.vlan"), inv("value.vlan", "4094")})
}

func TestHashInvariance(t *testing.T) {
	groups := map[string][]string{
		"ipv4": {
			`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32","192.168.100.16/28"],"mtu":9000}`,
			"{\n  \"mtu\": 9000,\n  \"exclude\": [ \"192.168.100.1/32\", \"192.168.100.16/28\" ],\n  \"range\": \"192.168.100.0/24\",\n  \"vlan\": 100,\n  \"clusterNetwork\": \"migration\"\n}\n",
			`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.16/28","192.168.100.1"],"mtu":9000}`,
			`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0\/24","exclude":["192.168.100.16/28","192.168.100.1/32"],"mtu":9000}`,
		},
		"zero vlan and mtu": {
			`{"clusterNetwork":"m","range":"10.0.0.0/24"}`,
			`{"clusterNetwork":"m","vlan":0,"mtu":0,"range":"10.0.0.0/24","exclude":[]}`,
			`{"range":"10.0.0.0/24","clusterNetwork":"m","vlan":null,"exclude":null}`,
		},
		"ipv6 spelling": {
			`{"clusterNetwork":"m","range":"fd00:100::/64","exclude":["fd00:100::1/128","fd00:100::100/120"]}`,
			`{"clusterNetwork":"m","range":"FD00:0100:0000::/64","exclude":["fd00:100::100/120","FD00:100::1"]}`,
		},
	}
	hashes := map[string]string{}
	for name, raws := range groups {
		want := mustNetwork(t, raws[0]).Hash()
		if len(want) != 64 {
			t.Fatalf("%s: hash %q is not 64 hex digits", name, want)
		}
		for _, raw := range raws[1:] {
			if got := mustNetwork(t, raw).Hash(); got != want {
				t.Errorf("%s: hash of %s = %s, want %s (canonical %s vs %s)", name, raw, got, want,
					mustNetwork(t, raw).Canonical(), mustNetwork(t, raws[0]).Canonical())
			}
		}
		for other, h := range hashes {
			if h == want {
				t.Errorf("groups %s and %s hash alike", name, other)
			}
		}
		hashes[name] = want
	}
	// Anchored outside migranet: printf '%s' "$validValue" | sha256sum (validValue is canonical).
	base := mustNetwork(t, validValue).Hash()
	if base != "d37a915f8284b3de95dc96b6c15f56d662a0e493c55db7dd64148f97962a9fa1" {
		t.Errorf("hash of %s = %s, want the SHA-256 of its canonical JSON", validValue, base)
	}
	// Any semantic change changes the hash.
	for _, raw := range []string{
		`{"clusterNetwork":"migration","vlan":101,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
		`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.2/32"],"mtu":9000}`,
		`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`,
		`{"clusterNetwork":"migration2","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`,
	} {
		if mustNetwork(t, raw).Hash() == base {
			t.Errorf("%s hashes like %s", raw, validValue)
		}
	}
}

// TestCanonical: key order, case, exclude order and bare-IP spelling of the value parsed do not
// change the canonical form. Catches: a canonical form that keeps what was written (two NADs for
// one network).
func TestCanonical(t *testing.T) {
	m := mustNetwork(t, `{"mtu":1500,"exclude":["fd00::ff","fd00::10/124","fd00::1"],"range":"FD00::/64","clusterNetwork":"m"}`)
	want := `{"clusterNetwork":"m","vlan":0,"range":"fd00::/64","exclude":["fd00::1/128","fd00::10/124","fd00::ff/128"],"mtu":1500}`
	if got := string(m.Canonical()); got != want {
		t.Errorf("Canonical() = %s, want %s", got, want)
	}
	var nilN *Network
	if nilN.Canonical() != nil || nilN.Hash() != "" || nilN.Summary() != "disabled" {
		t.Errorf("nil receiver: %q %q %q", nilN.Canonical(), nilN.Hash(), nilN.Summary())
	}
}

// TestInvalidHasNoTypedValue: a value that fails a check of its own has no typed value (nothing
// to hash or render), and admission names the same problems. Catches: a typed value built from a
// value with host bits, excludes outside the range or unparsable excludes.
func TestInvalidHasNoTypedValue(t *testing.T) {
	for _, raw := range []string{
		`{"clusterNetwork":"m","range":"10.0.0.5/24"}`,
		`{"clusterNetwork":"m","range":"10.0.0.0/24","exclude":["zz","10.0.0.9"]}`,
		`{"clusterNetwork":"m","range":"10.0.0.0/24","exclude":["10.0.1.0/24"]}`,
		`{"clusterNetwork":"m","vlan":4095,"range":"10.0.0.0/24"}`,
	} {
		n, errs, _ := ParseNetwork(raw, field.NewPath("value"))
		_, admission, _ := ParseAndValidateMigrationNetwork(raw, nil, field.NewPath("value"))
		if n != nil || len(errs) == 0 || dumpErrs(errs) != dumpErrs(admission) {
			t.Errorf("%s: typed %v, errors:\n%sadmission:\n%s", raw, n, dumpErrs(errs), dumpErrs(admission))
		}
	}
}

func TestSummary(t *testing.T) {
	tests := map[string]string{
		validValue: "migration vlan 100 192.168.100.0/24 (-1) mtu 9000",
		`{"clusterNetwork":"mig","range":"FD00::/64"}`:                                     "mig untagged fd00::/64",
		`{"clusterNetwork":"mig","range":"10.0.0.0/24","exclude":["10.0.0.1","10.0.0.2"]}`: "mig untagged 10.0.0.0/24 (-2)",
	}
	for raw, want := range tests {
		if got := mustNetwork(t, raw).Summary(); got != want {
			t.Errorf("Summary(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestShorten: echoed input is cut to at most maxShown (80) bytes on a rune boundary, the cut
// marked with "…(<whole length> bytes)" (13 bytes for a two-digit length, so 67 bytes are kept);
// input of exactly 80 bytes is echoed whole.
func TestShorten(t *testing.T) {
	a80 := strings.Repeat("a", 80)
	for _, tc := range []struct{ s, want string }{
		{a80, a80},
		{a80 + "b", strings.Repeat("a", 67) + "…(81 bytes)"},
		{strings.Repeat("a", 79) + "€", strings.Repeat("a", 67) + "…(82 bytes)"},
		{strings.Repeat("a", 66) + "€" + strings.Repeat("a", 20), strings.Repeat("a", 66) + "…(89 bytes)"}, // € straddles byte 67
		{strings.Repeat("\x80", 81), "…(81 bytes)"},                                                        // no rune start at all
	} {
		if got := shorten(tc.s); got != tc.want {
			t.Errorf("shorten(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
