package settings

import (
	"net/netip"
	"slices"

	"github.com/migranet/migranet/settings/v1beta1"
)

// RecordRange is status.ranges with rng (canonical: masked CIDR) added last, the oldest entries
// dropped beyond v1beta1.MaxRecordedRanges, and whether that changes anything. A range already
// recorded keeps its place. The settings controller records a range before it renders the NAD
// of it, so a whereabouts pool of a range missing here was never made for migranet's network.
func RecordRange(recorded []string, rng netip.Prefix) ([]string, bool) {
	s := rng.Masked().String()
	if slices.Contains(recorded, s) {
		return recorded, false
	}
	out := append(slices.Clone(recorded), s)
	if n := len(out) - v1beta1.MaxRecordedRanges; n > 0 {
		out = out[n:]
	}
	return out, true
}

// RecordedRanges are the ranges of s's status.ranges (entries that are not a CIDR skipped).
func RecordedRanges(s *v1beta1.Setting) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.Status.Ranges))
	for _, r := range s.Status.Ranges {
		if p, err := netip.ParsePrefix(r); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
