package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSameCommitSameBytes: the fault it catches is a release that cannot be rebuilt and checked:
// a timestamp from the clock instead of the commit's, a file order from the file system, a path
// of the build machine in the binary, a random temporary name in a file. Two cuts of the same
// commit must give the same SHA256SUMS (the archive, hence the digest, and the manifest).
func TestSameCommitSameBytes(t *testing.T) {
	firstDir := theRelease(t)
	second := makeRelease(t.TempDir(), testVersion)
	if second.err != nil {
		t.Fatalf("second make release: %v\n%s", second.err, second.output)
	}
	a, err := os.ReadFile(filepath.Join(firstDir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second.dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("two cuts of one commit differ:\n%s\nand\n%s", a, b)
	}
}

// TestBadVersionRefused: the fault it catches is a release named by something an admin cannot
// order or a registry cannot tag (make's default VERSION, git describe's output, a version
// without its v or its patch): `make release` must refuse it, say what it wants, and write
// nothing.
func TestBadVersionRefused(t *testing.T) {
	for _, v := range []string{"0.1.0", "v0.1", "c8a3afe-dirty", "v0.1.0+build.1"} {
		dist := t.TempDir()
		got := makeRelease(dist, v)
		if got.err == nil {
			t.Errorf("make release VERSION=%s succeeded:\n%s", v, got.output)
		}
		if !strings.Contains(got.output, "vMAJOR.MINOR.PATCH") {
			t.Errorf("make release VERSION=%s said %q: want the expected form named", v, got.output)
		}
		if entries, _ := os.ReadDir(dist); len(entries) != 0 {
			t.Errorf("make release VERSION=%s left %d entries in DIST", v, len(entries))
		}
	}
}
