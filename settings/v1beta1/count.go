package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
)

// Count is an exact non-negative number of addresses, of any size: an IPv6 /64 holds 2^64-2
// assignable addresses, more than an int64 holds and far more than a float64 holds exactly (2^53),
// which is what a JSON number becomes in most decoders (the API server's merge patches among
// them). migranet writes it as a JSON string of decimal digits, e.g. "18446744073709551614"; a
// JSON integer is read as well (statuses written before counts became strings).
//
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,38})$`
type Count string

// CountOf is n as a Count; nil or negative counts as 0.
func CountOf(n *big.Int) Count {
	if n == nil || n.Sign() <= 0 {
		return "0"
	}
	return Count(n.String())
}

// Big is c as an integer; false when c is not a decimal count (then the integer is 0).
func (c Count) Big() (*big.Int, bool) {
	n, ok := new(big.Int).SetString(string(c), 10)
	if !ok || n.Sign() < 0 {
		return new(big.Int), false
	}
	return n, true
}

// MarshalJSON writes c as a JSON string, so no decoder on the way rounds it.
func (c Count) MarshalJSON() ([]byte, error) { return json.Marshal(string(c)) }

// UnmarshalJSON reads a JSON string of decimal digits or a JSON integer.
func (c *Count) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Count(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a count is a string of decimal digits or an integer, not %s", b)
	}
	if _, ok := new(big.Int).SetString(n.String(), 10); !ok {
		return fmt.Errorf("a count is a whole number, not %s: write it as a string of decimal digits", n)
	}
	*c = Count(n.String())
	return nil
}
