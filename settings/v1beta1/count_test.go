package v1beta1

import (
	"encoding/json"
	"math/big"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestCountRoundTrip: a count survives JSON, a merge-patch style decode into map[string]any and
// the unstructured converter exactly, at 2^64-2 and 2^128-2 as at 3. Catches: a count written as
// a JSON number (decoded through float64 it becomes 18446744073709551616, or 1.8446744073709552e+19
// which the CRD's integer or pattern check refuses).
func TestCountRoundTrip(t *testing.T) {
	pow2 := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	for _, n := range []*big.Int{big.NewInt(0), big.NewInt(3), new(big.Int).Sub(pow2(64), big.NewInt(2)), new(big.Int).Sub(pow2(128), big.NewInt(2))} {
		in := IPCapacity{Usable: CountOf(n), Used: "3", Free: CountOf(n)}
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var loose map[string]any // what a JSON merge patch or an unstructured object holds
		if err := json.Unmarshal(raw, &loose); err != nil {
			t.Fatal(err)
		}
		if loose["usable"] != n.String() {
			t.Errorf("usable travels as %#v, want the string %q", loose["usable"], n.String())
		}
		back := IPCapacity{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(loose, &back); err != nil {
			t.Fatal(err)
		}
		if got, ok := back.Usable.Big(); !ok || got.Cmp(n) != 0 {
			t.Errorf("usable after the round trip = %s (%v), want %s", got, ok, n)
		}
	}
}

// TestCountReadsIntegers: a status written with integer counts still decodes.
func TestCountReadsIntegers(t *testing.T) {
	var c IPCapacity
	if err := json.Unmarshal([]byte(`{"usable":253,"used":3,"free":"250"}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Usable != "253" || c.Used != "3" || c.Free != "250" {
		t.Errorf("decoded %+v", c)
	}
	for _, bad := range []string{`{"usable":2.5}`, `{"usable":true}`, `{"usable":1e3}`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
	if _, ok := Count("-1").Big(); ok {
		t.Error(`Count("-1").Big() is ok`)
	}
	if CountOf(nil) != "0" || CountOf(big.NewInt(-2)) != "0" {
		t.Error("CountOf of nil or a negative count is not 0")
	}
}
