package settings

import (
	"math"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"testing"

	"go4.org/netipx"
)

func TestUsableAddresses(t *testing.T) {
	pow2 := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	sub := func(a *big.Int, b int64) *big.Int { return new(big.Int).Sub(a, big.NewInt(b)) }
	tests := []struct {
		name string
		m    MigrationNetwork
		want *big.Int
	}{
		{"ipv4 /24", MigrationNetwork{Range: "10.0.0.0/24"}, big.NewInt(254)},
		{"ipv4 /30", MigrationNetwork{Range: "10.0.0.0/30"}, big.NewInt(2)},
		{"ipv4 /16", MigrationNetwork{Range: "10.0.0.0/16"}, big.NewInt(65534)},
		{"ipv4 /0", MigrationNetwork{Range: "0.0.0.0/0"}, big.NewInt(1<<32 - 2)},
		{"excludes at both edges", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.0/30", "10.0.0.252/30"}}, big.NewInt(248)},
		{"exclude of network and broadcast changes nothing", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.0", "10.0.0.255"}}, big.NewInt(254)},
		{"bare ip and /32 alike", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.7", "10.0.0.9/32"}}, big.NewInt(252)},
		{"overlapping excludes counted once", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.0/25", "10.0.0.64/26"}}, big.NewInt(127)},
		{"host bits masked", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.5/30"}}, big.NewInt(250)},
		// Hand-counted: .1-.254 are candidates; .128/25 takes .128-.254 (127), .0 and .255 are not
		// counted anyway, so 254-127 = 127 whatever is nested in it.
		// Catches: a nested exclude at the end (or start) of the range counted again as an edge.
		{"nested exclude at the end of the range", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.128/25", "10.0.0.252/30", "10.0.0.255"}}, big.NewInt(127)},
		{"nested exclude at the start of the range", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.0/25", "10.0.0.0/30", "10.0.0.0"}}, big.NewInt(127)},
		// .8-.11 (4 addresses) minus nothing more: .11 is inside the /30. Catches: a single address
		// at the last address of an earlier block counted a second time.
		{"bare ip on the last address of an earlier block", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.0.8/30", "10.0.0.11"}}, big.NewInt(250)},
		{"exclude outside", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"10.0.1.0/24"}}, big.NewInt(254)},
		{"other family ignored", MigrationNetwork{Range: "10.0.0.0/24", Exclude: []string{"fd00::/8"}}, big.NewInt(254)},
		{"ipv6 /126", MigrationNetwork{Range: "fd00::/126"}, big.NewInt(2)},
		{"ipv6 /64", MigrationNetwork{Range: "fd00::/64"}, sub(pow2(64), 2)},
		{"ipv6 /64 with excludes", MigrationNetwork{Range: "fd00::/64", Exclude: []string{"fd00::1", "fd00::100/120", "fd00::8000:0:0:0/65"}},
			sub(pow2(63), 258)},
		// 2^66 addresses, minus network and broadcast, minus one whole interior /64 (2^64).
		// Catches: a /64 exclude sized as 0 (1<<64 overflows 64 bits) or as 2^63.
		{"ipv6 /62 minus an interior /64", MigrationNetwork{Range: "fd00::/62", Exclude: []string{"fd00:0:0:1::/64"}},
			sub(new(big.Int).Sub(pow2(66), pow2(64)), 2)},
		{"ipv6 /48 minus an interior /63 and /65", MigrationNetwork{Range: "fd00::/48", Exclude: []string{"fd00:0:0:2::/63", "fd00:0:0:8::/65"}},
			sub(new(big.Int).Sub(new(big.Int).Sub(pow2(80), pow2(65)), pow2(63)), 2)},
		{"ipv6 /0", MigrationNetwork{Range: "::/0"}, sub(pow2(128), 2)},
		{"ipv6 /0 minus half", MigrationNetwork{Range: "::/0", Exclude: []string{"8000::/1"}}, sub(pow2(127), 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := typed(t, tc.m).Usable(); got.Cmp(tc.want) != 0 {
				t.Errorf("Usable = %s, want %s", got, tc.want)
			}
		})
	}
	if got := (*Network)(nil).Usable(); got.Sign() != 0 {
		t.Errorf("a disabled network has %s usable addresses", got)
	}
}

// typed is m's Network without the checks of the value (Usable and Assignable must hold on any
// blocks: outside the range, of the other family, nested).
func typed(t testing.TB, m MigrationNetwork) *Network {
	t.Helper()
	rng, _, err := parsePrefixOrAddr(m.Range)
	if err != nil {
		t.Fatalf("range %q: %v", m.Range, err)
	}
	n := &Network{ClusterNetwork: m.ClusterNetwork, VLAN: m.VLAN, Range: rng.Masked(), MTU: m.MTU}
	for _, e := range m.Exclude {
		p, _, err := parsePrefixOrAddr(e)
		if err != nil {
			t.Fatalf("exclude %q: %v", e, err)
		}
		n.Exclude = append(n.Exclude, p.Masked())
	}
	return n
}

// TestUsableMatchesEnumeration cross-checks the arithmetic against counting addresses one by one
// on small random ranges with random excludes (nested, overlapping, at the edges, outside, other
// family); the test is the only place enumeration is allowed.
func TestUsableMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	randPrefix := func(base netip.Prefix, minBits, maxBits int) netip.Prefix {
		b := base.Addr().As16()
		if base.Addr().Is4() {
			b4 := base.Addr().As4()
			b4[2] ^= byte(r.IntN(8)) // sometimes outside the range
			b4[3] = byte(r.IntN(256))
			return netip.PrefixFrom(netip.AddrFrom4(b4), minBits+r.IntN(maxBits-minBits+1)).Masked()
		}
		b[14] ^= byte(r.IntN(8))
		b[15] = byte(r.IntN(256))
		return netip.PrefixFrom(netip.AddrFrom16(b), minBits+r.IntN(maxBits-minBits+1)).Masked()
	}
	for trial := range 300 {
		rng := netip.MustParsePrefix("10.1.0.0/22")
		lo, hi := 20, 32
		if trial%2 == 1 {
			rng, lo, hi = netip.MustParsePrefix("fd00::/118"), 116, 128
		}
		rng = netip.PrefixFrom(rng.Addr(), rng.Bits()+r.IntN(5)).Masked()
		var excl []netip.Prefix
		for range r.IntN(12) {
			excl = append(excl, randPrefix(rng, lo+2, hi))
		}
		if r.IntN(10) == 0 {
			excl = append(excl, randPrefix(rng, lo, hi)) // may cover the whole range
		}
		if r.IntN(5) == 0 {
			excl = append(excl, netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fe80::/10"))
		}
		if r.IntN(4) == 0 {
			excl = append(excl, netip.PrefixFrom(rng.Addr(), rng.Addr().BitLen()), netip.PrefixFrom(netipx.PrefixLastIP(rng), rng.Addr().BitLen()))
		}
		want := 0
		first, last := rng.Addr(), netipx.PrefixLastIP(rng)
		for a := first; rng.Contains(a); a = a.Next() {
			if a == first || a == last {
				continue
			}
			hit := false
			for _, e := range excl {
				hit = hit || e.Contains(a)
			}
			if !hit {
				want++
			}
		}
		got, _ := usableCount(rng, excl)
		if got.cmp(uint128{lo: uint64(want)}) != 0 {
			t.Fatalf("range %s excludes %v: usableCount = %s, enumeration = %d", rng, excl, got, want)
		}
	}
}

func TestUint128(t *testing.T) {
	maxU := uint128{hi: math.MaxUint64, lo: math.MaxUint64}
	if got := maxU.add(uint128{lo: 1}); got != maxU {
		t.Errorf("add does not saturate: %v", got)
	}
	if got := (uint128{lo: math.MaxUint64}).add(uint128{lo: 1}); got != (uint128{hi: 1}) {
		t.Errorf("carry: %v", got)
	}
	if got := (uint128{hi: 1}).sub(uint128{lo: 1}); got != (uint128{lo: math.MaxUint64}) {
		t.Errorf("borrow: %v", got)
	}
	if got := (uint128{lo: 1}).sub(uint128{lo: 2}); !got.isZero() {
		t.Errorf("sub below zero: %v", got)
	}
	if got := (uint128{hi: 1, lo: 3}).mulSmall(5); got != (uint128{hi: 5, lo: 15}) {
		t.Errorf("mulSmall: %v", got)
	}
	if got := (uint128{hi: 1 << 62}).mulSmall(6); got != maxU {
		t.Errorf("mulSmall does not saturate: %v", got)
	}
	if got := (uint128{hi: 1, lo: 2}).String(); got != "18446744073709551618" {
		t.Errorf("String = %s", got)
	}
	if ClampInt64(nil) != 0 || ClampInt64(big.NewInt(-3)) != 0 || ClampInt64(big.NewInt(42)) != 42 ||
		ClampInt64(new(big.Int).Lsh(big.NewInt(1), 64)) != math.MaxInt64 {
		t.Error("ClampInt64 is wrong")
	}
}

func TestLastAddr(t *testing.T) {
	for _, s := range []string{"10.0.0.0/24", "10.0.0.7/32", "0.0.0.0/0", "10.0.0.0/31", "fd00::/64", "fd00::/63",
		"fd00::/65", "::/0", "fd00::1/128", "8000::/1", "fd00:1:2:3:4::/80", "ffff:ffff::/32"} {
		p := netip.MustParsePrefix(s).Masked()
		if got, want := lastAddr(p), netipx.PrefixLastIP(p); got != want {
			t.Errorf("lastAddr(%s) = %s, want %s", p, got, want)
		}
	}
}

// TestAssignable: the addresses whereabouts may hand out are those Usable counts.
// Catches: a reservation of the network, broadcast or an excluded address counted as used.
func TestAssignable(t *testing.T) {
	m := &MigrationNetwork{ClusterNetwork: "migration", Range: "192.168.100.0/24", Exclude: []string{"192.168.100.128/26", "192.168.100.7"}}
	ok := typed(t, *m).Assignable
	for addr, want := range map[string]bool{
		"192.168.100.1": true, "192.168.100.254": true, "192.168.100.0": false, "192.168.100.255": false,
		"192.168.100.7": false, "192.168.100.130": false, "192.168.100.192": true, "10.0.0.1": false,
	} {
		if got := ok(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	v6 := typed(t, MigrationNetwork{ClusterNetwork: "migration", Range: "fd00:10:77::/64", Exclude: []string{"fd00:10:77::1/128"}}).Assignable
	for addr, want := range map[string]bool{"fd00:10:77::": false, "fd00:10:77::1": false, "fd00:10:77::2": true, "fd00:10:77:0:ffff:ffff:ffff:ffff": false} {
		if got := v6(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	if (*Network)(nil).Assignable(netip.MustParseAddr("192.168.100.1")) {
		t.Error("a disabled network assigns an address")
	}
}
