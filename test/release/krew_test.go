package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/migranet/migranet/test/cluster"
)

// krewTools builds (once, cached) krew v0.4.3 and its validate-krew-manifest (test/tools/krew) and
// returns their folder.
func krewTools(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(cluster.RepoRoot(), "test/tools/build.sh"), "krew")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/tools/build.sh krew: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// krewManifest is what the test reads of the release's krew plugin manifest.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct{ Name string }
	Spec       struct {
		Version   string
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		}
	}
}

// TestKrewManifestValidates: krew's own validate-krew-manifest (v0.4.3: the plugin's structure,
// name, sha256 and file operations, each platform's selector used and none overlapping) accepts
// the release's krew manifest under the name krew's index gives it (plugins/migranet.yaml). The
// fault it catches is a manifest krew's index refuses: a bad apiVersion, a name that does not
// match the file, a platform without uri, sha256 or bin, or two platforms selecting one machine.
func TestKrewManifestValidates(t *testing.T) {
	tools, dir := krewTools(t), theRelease(t)
	data, err := os.ReadFile(filepath.Join(dir, "krew-migranet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asIndexed := filepath.Join(t.TempDir(), "migranet.yaml")
	if err := os.WriteFile(asIndexed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(tools, "validate-krew-manifest"), "-manifest", asIndexed, "-skip-install").CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}
}

// TestKrewManifestNamesTheArchives: one platform per CLI archive, each selecting its own os and
// arch, downloading BASE_URL/<its archive>, with the archive's sha256 and its binary's name;
// version the release's. The fault it catches is a manifest that installs the wrong file (the sum
// of another archive, a stale sum from before the archive was finished, a URI without the
// version), a platform missing, or the windows binary without its .exe.
func TestKrewManifestNamesTheArchives(t *testing.T) {
	dir := theRelease(t)
	data, err := os.ReadFile(filepath.Join(dir, "krew-migranet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "migranet" || m.Spec.Version != testVersion {
		t.Errorf("plugin %q version %q, want migranet %s", m.Metadata.Name, m.Spec.Version, testVersion)
	}
	var seen []string
	for _, p := range m.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		seen = append(seen, platform)
		if want := testBaseURL + "/" + cliArchive(platform); p.URI != want {
			t.Errorf("%s: uri %q, want %q", platform, p.URI, want)
		}
		archive, err := os.ReadFile(filepath.Join(dir, cliArchive(platform)))
		if err != nil {
			t.Errorf("%s: %v", platform, err)
			continue
		}
		sum := sha256.Sum256(archive)
		if p.Sha256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s, the archive's is %x", platform, p.Sha256, sum)
		}
		if p.Bin != pluginBinary(platform) {
			t.Errorf("%s: bin %q, want %q", platform, p.Bin, pluginBinary(platform))
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, cliPlatforms()) {
		t.Errorf("platforms %q, want %q", seen, cliPlatforms())
	}
}

// krewInstall runs krew's own install of the release's manifest with archive as the download,
// for the platform, into a KREW_ROOT of its own.
func krewInstall(t *testing.T, tools, dir, platform, archive string) (string, []byte, error) {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "/")
	root := t.TempDir()
	cmd := exec.Command(filepath.Join(tools, "krew"), "install", "--manifest="+filepath.Join(dir, "krew-migranet.yaml"), "--archive="+archive)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_OS="+goos, "KREW_ARCH="+goarch)
	out, err := cmd.CombinedOutput()
	return root, out, err
}

// TestKrewInstallsThePlugin: krew itself installs the plugin on every platform from the release's
// manifest and archive (it checks the sha256, unpacks, finds the bin), refuses another platform's
// archive (the near miss: its sha256 is not the manifest's), and on this machine's platform the
// installed kubectl-migranet runs and names itself `kubectl migranet`. The fault it catches is a
// manifest and archives krew cannot install: a sum that is not the archive's, a bin the archive
// does not hold, an archive format krew cannot unpack.
func TestKrewInstallsThePlugin(t *testing.T) {
	tools, dir := krewTools(t), theRelease(t)
	for _, platform := range cliPlatforms() {
		root, out, err := krewInstall(t, tools, dir, platform, filepath.Join(dir, cliArchive(platform)))
		if err != nil {
			t.Errorf("krew install (%s): %v\n%s", platform, err, out)
			continue
		}
		if platform != "linux/amd64" {
			continue
		}
		help, err := exec.Command(filepath.Join(root, "bin", "kubectl-migranet"), "help").Output()
		if err != nil || !strings.Contains(string(help), "kubectl migranet status [flags]") {
			t.Errorf("krew's kubectl-migranet help: %v\n%s", err, help)
		}
	}
	if _, out, err := krewInstall(t, tools, dir, "linux/amd64", filepath.Join(dir, cliArchive("linux/arm64"))); err == nil {
		t.Errorf("krew installed linux/arm64's archive as linux/amd64's:\n%s", out)
	}
}
