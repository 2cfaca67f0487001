package chart

import (
	"strings"
	"testing"
)

// TestDiffLines: each side's lines come back from the hunks in order, and the lines both share
// are common hunks (so the template repeats nothing and guards only what differs).
func TestDiffLines(t *testing.T) {
	for _, tc := range []struct {
		a, b   string
		common int // lines in common hunks
		hunks  int
	}{
		{"", "", 0, 0},
		{"x y z", "x y z", 3, 1},
		{"x y z", "", 0, 1},
		{"x a y", "x y", 2, 3},
		{"x y", "x b y", 2, 3},
		{"x a y c", "x b y", 2, 4},
		{"k v1 v2 v3 e", "k v1 e", 3, 3},
	} {
		a, b := strings.Fields(tc.a), strings.Fields(tc.b)
		hunks := diffLines(a, b)
		var gotA, gotB []string
		common := 0
		for _, h := range hunks {
			gotA, gotB = append(gotA, h.a...), append(gotB, h.b...)
			if h.common {
				common += len(h.a)
				if strings.Join(h.a, " ") != strings.Join(h.b, " ") {
					t.Errorf("%q vs %q: common hunk %q ≠ %q", tc.a, tc.b, h.a, h.b)
				}
			}
		}
		if strings.Join(gotA, " ") != tc.a || strings.Join(gotB, " ") != tc.b {
			t.Errorf("%q vs %q: hunks give back %q and %q", tc.a, tc.b, gotA, gotB)
		}
		if common != tc.common || len(hunks) != tc.hunks {
			t.Errorf("%q vs %q: %d common lines in %d hunks, want %d in %d", tc.a, tc.b, common, len(hunks), tc.common, tc.hunks)
		}
	}
}
