package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/migranet/migranet/test/cluster"
)

// The release the tests cut, and where its image must be pushed.
const (
	testVersion  = "v0.0.1-test.1"
	testRegistry = "example.invalid/release-test"
)

// cut is one `make release` of HEAD.
type cut struct {
	dir    string // DIST/VERSION
	output string // what make printed
	err    error
}

// makeRelease runs `make release` (the admin's command) with VERSION version into a DIST under
// dist.
func makeRelease(dist, version string) cut {
	cmd := exec.Command("make", "--no-print-directory", "release", "VERSION="+version, "REGISTRY="+testRegistry, "DIST="+dist)
	cmd.Dir = cluster.RepoRoot()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return cut{dir: filepath.Join(dist, version), output: out.String(), err: err}
}

var (
	firstOnce sync.Once
	first     cut
)

// theRelease is the release every check reads, cut once per run.
func theRelease(t *testing.T) string {
	t.Helper()
	firstOnce.Do(func() {
		dist, err := os.MkdirTemp("", "migranet-release-")
		if err != nil {
			first.err = err
			return
		}
		first = makeRelease(dist, testVersion)
	})
	if first.err != nil {
		t.Fatalf("make release VERSION=%s: %v\n%s", testVersion, first.err, first.output)
	}
	return first.dir
}

// TestMain removes the release the checks cut.
func TestMain(m *testing.M) {
	code := m.Run()
	if first.dir != "" && code == 0 {
		_ = os.RemoveAll(filepath.Dir(first.dir))
	}
	os.Exit(code)
}

// headCommit is the commit `make release` cuts: HEAD, as git names it.
func headCommit(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", cluster.RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}
