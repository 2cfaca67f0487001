package settings

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestRecordRange: status.ranges after recording a range.
// Catches: a range recorded twice or under a host spelling (EmptyPools compares masked ranges),
// a record growing without bound.
func TestRecordRange(t *testing.T) {
	cases := []struct {
		name     string
		recorded []string
		rng      string
		want     []string
		changed  bool
	}{
		{"first", nil, "192.168.100.7/24", []string{"192.168.100.0/24"}, true},
		{"next, last", []string{"10.76.0.0/25"}, "fd00:10:77::/64", []string{"10.76.0.0/25", "fd00:10:77::/64"}, true},
		{"again: no write", []string{"192.168.100.0/24", "10.76.0.0/25"}, "192.168.100.0/24", []string{"192.168.100.0/24", "10.76.0.0/25"}, false},
	}
	for _, tc := range cases {
		got, changed := RecordRange(tc.recorded, netip.MustParsePrefix(tc.rng))
		if diff := cmp.Diff(tc.want, got); diff != "" || changed != tc.changed {
			t.Errorf("%s: changed %v (want %v), (-want +got):\n%s", tc.name, changed, tc.changed, diff)
		}
	}
	var full []string
	for i := range v1beta1.MaxRecordedRanges {
		full = append(full, fmt.Sprintf("10.%d.0.0/24", i))
	}
	got, _ := RecordRange(full, netip.MustParsePrefix("10.250.0.0/24"))
	if len(got) != v1beta1.MaxRecordedRanges || got[0] != "10.1.0.0/24" || got[len(got)-1] != "10.250.0.0/24" {
		t.Errorf("full record: %d entries, first %s, last %s; want %d, the oldest dropped", len(got), got[0], got[len(got)-1], v1beta1.MaxRecordedRanges)
	}
	s := &v1beta1.Setting{Status: v1beta1.SettingStatus{Ranges: []string{"10.76.0.0/25", "junk", "fd00:10:77::/64"}}}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("10.76.0.0/25"), netip.MustParsePrefix("fd00:10:77::/64")}, RecordedRanges(s), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("RecordedRanges (-want +got):\n%s", diff)
	}
}
