package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/migranet/migranet/test/cluster"
)

// The release the tests cut, where its image must be pushed and its files downloaded from.
const (
	testVersion  = "v0.0.1-test.1"
	testRegistry = "example.invalid/release-test"
	testBaseURL  = "https://downloads.example.invalid/migranet/" + testVersion
)

// The files of a release folder that signing writes, or that an unsigned cut writes instead.
const (
	unsignedFile   = "UNSIGNED"
	sumsSignature  = "SHA256SUMS.sig"
	imagePayload   = "migranet-image.payload.json"
	imageSignature = imagePayload + ".sig"
)

// cliPlatforms are the platforms of the CLI archives, as GOOS/GOARCH.
func cliPlatforms() []string {
	return []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"}
}

// cliArchive is the CLI archive of platform (GOOS/GOARCH) in a release folder.
func cliArchive(platform string) string {
	goos, goarch, _ := strings.Cut(platform, "/")
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return "kubectl-migranet_" + testVersion + "_" + goos + "_" + goarch + ext
}

// sbomFile is the SBOM of platform's binary in a release folder.
func sbomFile(platform string) string {
	goos, goarch, _ := strings.Cut(platform, "/")
	return "kubectl-migranet_" + testVersion + "_" + goos + "_" + goarch + ".cdx.json"
}

// releaseFiles are the files of a release folder besides SHA256SUMS and the signatures (or
// UNSIGNED), by name: every one is in SHA256SUMS.
func releaseFiles() []string {
	files := []string{archiveName(testVersion), "migranet.yaml", "krew-migranet.yaml", imagePayload}
	for _, p := range cliPlatforms() {
		files = append(files, cliArchive(p), sbomFile(p))
	}
	slices.Sort(files)
	return files
}

// cut is one `make release` of HEAD.
type cut struct {
	dir    string // DIST/VERSION
	output string // what make printed
	err    error
	kept   bool // in the cache of cuts (keptCut): not removed after the run
}

// makeRelease runs `make release` (the admin's command) with VERSION version into a DIST under
// dist; vars are more make variables (SIGNING_KEY=...).
func makeRelease(dist, version string, vars ...string) cut {
	args := append([]string{"--no-print-directory", "release", "VERSION=" + version, "REGISTRY=" + testRegistry,
		"BASE_URL=" + testBaseURL, "DIST=" + dist}, vars...)
	cmd := exec.Command("make", args...)
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

// theRelease is the release every check reads, unsigned: cut once per run, or kept from an
// earlier run of the same commit and release machinery (keptCut).
func theRelease(t *testing.T) string {
	t.Helper()
	firstOnce.Do(func() {
		var ok bool
		if first, ok = keptCut(); ok {
			return
		}
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

// TestMain removes the releases the checks cut.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range []cut{first, signed} {
		if c.dir != "" && !c.kept && code == 0 {
			_ = os.RemoveAll(filepath.Dir(c.dir))
		}
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
