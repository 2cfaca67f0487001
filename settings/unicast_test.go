package settings

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestRangeUnicast walks each special-purpose block at its edges: the block itself, a small range
// at its first and last address, the same just outside it, and wider ranges that contain it.
func TestRangeUnicast(t *testing.T) {
	const suggestion = `e.g. "192.168.100.0/24" or "fd00:100::/64"`
	refused := func(blocks ...string) []string {
		return append(blocks, "no node can own for unicast traffic", suggestion)
	}
	tests := []struct {
		rng  string
		bad  []string // substrings of the value.range error; nil = no error
		warn string   // substring of a warning; "" = no warning
	}{
		// unspecified / "this network" 0.0.0.0/8
		{rng: "0.0.0.0/0", bad: refused("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32")},
		{rng: "0.0.0.0/8", bad: refused(`0.0.0.0/8 is "this network"`)},
		{rng: "0.0.0.0/30", bad: refused("0.0.0.0/8")},
		{rng: "0.255.255.252/30", bad: refused("0.0.0.0/8")},
		{rng: "1.0.0.0/30"},
		{rng: "0.0.0.0/7", bad: refused("0.0.0.0/8")}, // contains it partly: 0/8 and 1/8
		// loopback
		{rng: "126.255.255.252/30"},
		{rng: "127.0.0.0/30", bad: refused("127.0.0.0/8 is loopback")},
		{rng: "127.255.255.252/30", bad: refused("127.0.0.0/8")},
		{rng: "128.0.0.0/30"},
		{rng: "126.0.0.0/7", bad: refused("127.0.0.0/8")},
		// link-local
		{rng: "169.253.255.252/30"},
		{rng: "169.254.0.0/30", bad: refused("169.254.0.0/16 is link-local")},
		{rng: "169.254.255.252/30", bad: refused("169.254.0.0/16")},
		{rng: "169.255.0.0/30"},
		{rng: "169.0.0.0/8", bad: refused("169.254.0.0/16")},
		// multicast
		{rng: "223.255.255.252/30"},
		{rng: "224.0.0.0/30", bad: refused("224.0.0.0/4 is multicast")},
		{rng: "239.255.255.252/30", bad: refused("224.0.0.0/4")},
		{rng: "192.0.0.0/2", bad: refused("224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32")},
		// reserved and the limited broadcast
		{rng: "240.0.0.0/30", bad: refused("240.0.0.0/4 is reserved")},
		{rng: "255.255.255.252/30", bad: refused("255.255.255.255/32 is the limited broadcast", "240.0.0.0/4")},
		// IPv4 kept valid: RFC 1918, CGNAT, and their edges
		{rng: "10.0.0.0/8"},
		{rng: "172.16.0.0/12"},
		{rng: "192.168.0.0/16"},
		{rng: "100.64.0.0/10"},
		{rng: "100.127.255.252/30"},
		{rng: "198.18.0.0/15"}, // benchmarking (RFC 2544): unicast, admitted
		// documentation: admitted with a warning
		{rng: "192.0.2.0/24", warn: "192.0.2.0/24, documentation TEST-NET-1 (RFC 5737)"},
		{rng: "198.51.100.0/30", warn: "TEST-NET-2"},
		{rng: "203.0.113.252/30", warn: "TEST-NET-3"},
		{rng: "203.0.114.0/30"},
		{rng: "192.0.3.0/30"},
		{rng: "2001:db8::/32", warn: "IPv6 documentation (RFC 3849)"},
		{rng: "2001:db8:ffff:ffff::/64", warn: "RFC 3849"},
		{rng: "2001:db9::/64"},
		{rng: "3fff::/20", warn: "RFC 9637"},
		// IPv6 unspecified and loopback
		{rng: "::/64", bad: refused("::/128 is the unspecified", "::1/128 is the IPv6 loopback", "::ffff:0.0.0.0/96 is IPv4-mapped")},
		{rng: "::/0", bad: refused("::/128", "fe80::/10", "ff00::/8")},
		{rng: "::4/126"}, // just past ::1, before the IPv4-mapped block: admitted (odd, but unicast)
		// IPv6 link-local
		{rng: "fe7f:ffff:ffff:ffff::/64"},
		{rng: "fe80::/64", bad: refused("fe80::/10 is IPv6 link-local")},
		{rng: "febf:ffff:ffff:ffff::/64", bad: refused("fe80::/10")},
		{rng: "fec0::/64"},
		{rng: "fe00::/8", bad: refused("fe80::/10")},
		// IPv6 multicast
		{rng: "feff:ffff:ffff:ffff::/64"},
		{rng: "ff00::/64", bad: refused("ff00::/8 is IPv6 multicast")},
		{rng: "ff02::/120", bad: refused("ff00::/8")},
		{rng: "ffff:ffff:ffff:ffff::/64", bad: refused("ff00::/8")},
		{rng: "8000::/1", bad: refused("fe80::/10", "ff00::/8")},
		// IPv6 kept valid: ULA at its edges, global unicast
		{rng: "fc00::/7"},
		{rng: "fc00::/64"},
		{rng: "fdff:ffff:ffff:ffff::/64"},
		{rng: "2a01:4f8::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.rng, func(t *testing.T) {
			m := &MigrationNetwork{ClusterNetwork: "migration", VLAN: 100, Range: tt.rng}
			errs, warns := ValidateMigrationNetwork(m, nil, field.NewPath("value"))
			var rangeErrs field.ErrorList
			for _, e := range errs {
				if e.Field == "value.range" {
					rangeErrs = append(rangeErrs, e)
				}
			}
			if tt.bad == nil {
				if len(rangeErrs) > 0 {
					t.Fatalf("want no error on value.range, got %v", rangeErrs)
				}
			} else {
				if len(rangeErrs) != 1 {
					t.Fatalf("want one error on value.range, got %v", errs)
				}
				for _, sub := range tt.bad {
					if !strings.Contains(rangeErrs[0].Error(), sub) {
						t.Errorf("error %q lacks %q", rangeErrs[0].Error(), sub)
					}
				}
			}
			joined := strings.Join(warns, "\n")
			switch {
			case tt.warn == "" && strings.Contains(joined, "reserved for examples"):
				t.Errorf("unexpected documentation warning: %s", joined)
			case tt.warn != "" && (!strings.Contains(joined, tt.warn) || !strings.HasPrefix(joined, "value.range: ")):
				t.Errorf("warnings %q lack %q (with the field path in front)", joined, tt.warn)
			}
		})
	}
}

// TestRangeUnicastNoCapacityNoise checks that a refused range is refused once: no capacity error
// on top (0.0.0.0/0 would otherwise be judged for its 2^32-2 addresses).
func TestRangeUnicastNoCapacityNoise(t *testing.T) {
	raw := `{"clusterNetwork":"migration","vlan":1,"range":"224.0.0.0/24","exclude":["224.0.0.0/25","224.0.0.128/25"]}`
	_, errs, _ := ParseAndValidateMigrationNetwork(raw, nil, field.NewPath("value"))
	checkErrs(t, errs, []wantErr{inv("value.range", "multicast")})
}
