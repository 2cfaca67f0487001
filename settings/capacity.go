package settings

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"net/netip"
	"slices"
)

// ClampInt64 converts a count to int64, saturating at math.MaxInt64 (and 0 for nil or negative).
func ClampInt64(n *big.Int) int64 {
	switch {
	case n == nil || n.Sign() <= 0:
		return 0
	case n.IsInt64():
		return n.Int64()
	}
	return math.MaxInt64
}

// usableCount is Network.Usable on parsed prefixes; it also returns the range's span (its size
// minus one, which unlike the size always fits 128 bits). Excludes inside the range are sorted by
// first address (wider first) and swept: CIDRs nest or are disjoint, so the union is the sum of the
// blocks not nested in an earlier one. O(n log n), nothing is enumerated.
func usableCount(rng netip.Prefix, excl []netip.Prefix) (usable, span uint128) {
	rng = rng.Masked()
	first, last := rng.Addr(), lastAddr(rng)
	span = addrUint128(last).sub(addrUint128(first))
	if first == last {
		return uint128{}, span
	}
	inside := make([]netip.Prefix, 0, len(excl))
	for _, p := range excl {
		p = p.Masked()
		switch {
		case !p.IsValid() || p.Addr().Is4() != first.Is4():
		case p.Bits() <= rng.Bits() && p.Contains(first):
			return uint128{}, span // covers the whole range
		case p.Bits() > rng.Bits() && rng.Contains(p.Addr()):
			inside = append(inside, p)
		}
	}
	slices.SortFunc(inside, comparePrefixes)
	var excluded, edges uint128
	var reachEnd netip.Addr
	for i, p := range inside {
		if i > 0 && p.Addr().Compare(reachEnd) <= 0 {
			continue // nested in the block that reaches furthest
		}
		reachEnd = lastAddr(p)
		excluded = excluded.add(prefixSize(p))
		if p.Addr() == first {
			edges = edges.add(uint128{lo: 1})
		}
		if reachEnd == last {
			edges = edges.add(uint128{lo: 1})
		}
	}
	// Interior addresses (span-1 of them) minus the excluded ones that are not the two edges.
	return span.sub(uint128{lo: 1}).sub(excluded.sub(edges)), span
}

// lastAddr is the last address of p, computed on 128-bit integers.
func lastAddr(p netip.Prefix) netip.Addr {
	a := addrUint128(p.Addr())
	hostBits := p.Addr().BitLen() - p.Bits()
	switch {
	case hostBits >= 128:
		a = uint128{hi: math.MaxUint64, lo: math.MaxUint64}
	case hostBits >= 64:
		a.hi |= 1<<(hostBits-64) - 1
		a.lo = math.MaxUint64
	default:
		a.lo |= 1<<hostBits - 1
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	if p.Addr().Is4() {
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return netip.AddrFrom16(b)
}

// comparePrefixes orders prefixes by first address, then wider first.
func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Bits(), b.Bits())
}

// prefixSize is the number of addresses in p, saturating at 2^128-1 for ::/0.
func prefixSize(p netip.Prefix) uint128 {
	n := p.Addr().BitLen() - p.Bits()
	switch {
	case n >= 128:
		return uint128{hi: math.MaxUint64, lo: math.MaxUint64}
	case n >= 64:
		return uint128{hi: 1 << (n - 64)}
	}
	return uint128{lo: 1 << n}
}

// uint128 is an unsigned 128-bit count. Sums of disjoint blocks inside a range never exceed 2^128-1;
// add and mulSmall saturate anyway, sub stops at zero.
type uint128 struct{ hi, lo uint64 }

func addrUint128(a netip.Addr) uint128 {
	b := a.As16()
	return uint128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (a uint128) add(b uint128) uint128 {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	hi, over := bits.Add64(a.hi, b.hi, carry)
	if over != 0 {
		return uint128{hi: math.MaxUint64, lo: math.MaxUint64}
	}
	return uint128{hi: hi, lo: lo}
}

// sub returns a-b, or 0 when b > a.
func (a uint128) sub(b uint128) uint128 {
	if a.cmp(b) < 0 {
		return uint128{}
	}
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return uint128{hi: hi, lo: lo}
}

func (a uint128) cmp(b uint128) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

func (a uint128) isZero() bool { return a.hi == 0 && a.lo == 0 }

// mulSmall returns a*k, saturating.
func (a uint128) mulSmall(k uint64) uint128 {
	hiLo, lo := bits.Mul64(a.lo, k)
	hiHi, hiLow := bits.Mul64(a.hi, k)
	hi, carry := bits.Add64(hiLow, hiLo, 0)
	if hiHi != 0 || carry != 0 {
		return uint128{hi: math.MaxUint64, lo: math.MaxUint64}
	}
	return uint128{hi: hi, lo: lo}
}

func (a uint128) big() *big.Int {
	n := new(big.Int).SetUint64(a.hi)
	n.Lsh(n, 64)
	return n.Or(n, new(big.Int).SetUint64(a.lo))
}

func (a uint128) String() string { return a.big().String() }
