package settings

import (
	"fmt"
	"math/big"
)

// shortExact is the largest count ShortCount writes in full, and the largest distance from a
// power of two it writes as 2^k±d.
const shortExact = 999_999

// ShortCount writes an address count for people: in full below a million ("253"); within a
// million of a power of two as that power plus or minus the rest, which stays exact ("2^64-2",
// "2^64-5", "2^20+3"); otherwise rounded to three significant digits ("~1.84e+19"). nil is "0".
func ShortCount(n *big.Int) string {
	if n == nil || n.Sign() <= 0 {
		return "0"
	}
	limit := big.NewInt(shortExact)
	if n.Cmp(limit) <= 0 {
		return n.String()
	}
	// The nearest powers of two are 2^(bitlen-1) ≤ n < 2^bitlen.
	for _, k := range []int{n.BitLen() - 1, n.BitLen()} {
		d := new(big.Int).Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(k)))
		if new(big.Int).Abs(d).Cmp(limit) > 0 {
			continue
		}
		switch d.Sign() {
		case 0:
			return fmt.Sprintf("2^%d", k)
		case 1:
			return fmt.Sprintf("2^%d+%s", k, d)
		}
		return fmt.Sprintf("2^%d-%s", k, d.Neg(d))
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	return fmt.Sprintf("~%.3g", f)
}

// CapacitySummary is "<used>/<usable>" in ShortCount's form, e.g. "3/253" or "3/2^64-2".
func CapacitySummary(used, usable *big.Int) string {
	return ShortCount(used) + "/" + ShortCount(usable)
}
