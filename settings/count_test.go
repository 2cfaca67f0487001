package settings

import (
	"math/big"
	"testing"
)

func TestShortCount(t *testing.T) {
	pow2 := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	add := func(a *big.Int, b int64) *big.Int { return new(big.Int).Add(a, big.NewInt(b)) }
	tests := []struct {
		n    *big.Int
		want string
	}{
		{nil, "0"},
		{big.NewInt(0), "0"},
		{big.NewInt(253), "253"},
		{big.NewInt(999_999), "999999"},
		{add(pow2(20), 3), "2^20+3"},
		{add(pow2(64), -2), "2^64-2"},
		{add(pow2(64), -5), "2^64-5"},
		{pow2(64), "2^64"},
		{add(pow2(128), -2), "2^128-2"},
		{add(pow2(63), -258), "2^63-258"},
		{new(big.Int).Sub(pow2(64), pow2(56)), "~1.84e+19"},
		{big.NewInt(3_000_000_000), "~3e+09"},
	}
	for _, tc := range tests {
		if got := ShortCount(tc.n); got != tc.want {
			t.Errorf("ShortCount(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := CapacitySummary(big.NewInt(3), add(pow2(64), -2)); got != "3/2^64-2" {
		t.Errorf("CapacitySummary = %q", got)
	}
}
