package upgrade

import (
	"strings"
	"testing"
)

// TestChooseRelease: the release an upgrade starts from. The fault it catches is an upgrade that
// tests nothing (from the newest release while its manifests are the work tree's, as right after
// the v0.2.0 entry is written), that skips a release (v0.1.0 while v0.2.0 differs from the work
// tree), or that picks by position rather than by what renders (the near miss: an older release
// that renders as the work tree too is passed over as well).
func TestChooseRelease(t *testing.T) {
	v2, v1, v0 := Release{"v0.2.0", "c2"}, Release{"v0.1.0", "c1"}, Release{"v0.0.1", "c0"}
	renders := map[string]string{"c2": "manifests of v0.2.0", "c1": "manifests of v0.1.0", "c0": "manifests of v0.2.0"}
	render := func(commit string) ([]byte, error) { return []byte(renders[commit]), nil }
	for name, tc := range map[string]struct {
		rels    []Release
		current string
		want    string // commit; "" none
		why     string
	}{
		"v0.2.0 recorded, the work tree is v0.2.0: from v0.1.0": {[]Release{v2, v1}, "manifests of v0.2.0", "c1", "v0.2.0 render as the current ones"},
		"manifests changed since v0.2.0: from v0.2.0":           {[]Release{v2, v1}, "manifests of v0.3.0", "c2", "the newest release"},
		"only v0.1.0, the work tree changed: from v0.1.0":       {[]Release{v1}, "manifests of v0.2.0", "c1", "v0.1.0"},
		"only v0.1.0, the work tree is v0.1.0: none":            {[]Release{v1}, "manifests of v0.1.0", "", ""},
		"an older release renders as the current too":           {[]Release{v2, v0, v1}, "manifests of v0.2.0", "c1", "v0.2.0, v0.0.1 render"},
	} {
		t.Run(name, func(t *testing.T) {
			from, ok, err := chooseRelease(tc.rels, []byte(tc.current), render)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != "") || from.Commit != tc.want || !strings.Contains(from.Why, tc.why) {
				t.Errorf("chose %+v (ok %v), want commit %q with %q in why", from, ok, tc.want, tc.why)
			}
		})
	}
}

// TestReleasesFromChangelog: the fault it catches is a heading the upgrade does not read (an
// em dash, a pre-release) or a line taken for a release that is not one (Unreleased, a commit
// named in a bullet).
func TestReleasesFromChangelog(t *testing.T) {
	got := Releases("## Unreleased\n\n- fixed in commit abcdef1\n\n## v0.2.0 — 2026-11-28, commit 0123456789abcdef0123456789abcdef01234567\n\n## v0.2.0-rc.1 — commit abcdef1\n\n## v0.1.0 — 2026-11-27, commit 44173e034c84fe966bd28b728654abd70fe952af\n")
	want := []Release{{"v0.2.0", "0123456789abcdef0123456789abcdef01234567"}, {"v0.2.0-rc.1", "abcdef1"}, {"v0.1.0", "44173e034c84fe966bd28b728654abd70fe952af"}}
	if len(got) != len(want) {
		t.Fatalf("Releases = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("release %d: %v, want %v", i, got[i], want[i])
		}
	}
}
