package webhook

import "testing"

// TestTruncate: at most n bytes, cut on a rune boundary, "..." marking a cut; a string of
// exactly n bytes is kept whole; bytes that are no rune start at all never make it panic.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abc..."},
		{"ab€€", 8, "ab€€"},                // 2 + 3 + 3 bytes: fits exactly
		{"ab€€x", 8, "ab€..."},             // the second € would be split at byte 5: cut before it
		{"a€bcdef", 6, "a..."},             // cut at byte 3, inside €: back to 1
		{"\x80\x80\x80\x80\x80", 4, "..."}, // no rune start before the cut
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
