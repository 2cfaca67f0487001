package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/test/cluster"
)

// archived is one entry of a CLI archive.
type archived struct {
	name  string
	mode  os.FileMode
	owner string // uid:gid (tar), "" (zip)
	mtime time.Time
	data  []byte
}

// readCLIArchive reads the entries of platform's CLI archive, in their order.
func readCLIArchive(t *testing.T, dir, platform string) []archived {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, cliArchive(platform)))
	if err != nil {
		t.Fatal(err)
	}
	var out []archived
	if strings.HasSuffix(cliArchive(platform), ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", cliArchive(platform), err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, archived{name: f.Name, mode: f.Mode(), mtime: f.Modified, data: b})
		}
		return out
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", cliArchive(platform), err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", cliArchive(platform), err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, archived{name: h.Name, mode: h.FileInfo().Mode(), owner: strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid), mtime: h.ModTime, data: b})
	}
}

// commitTime is HEAD's committer time: every timestamp of a release.
func commitTime(t *testing.T) time.Time {
	t.Helper()
	out, err := exec.Command("git", "-C", cluster.RepoRoot(), "show", "-s", "--format=%ct", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(secs, 0)
}

// pluginBinary is the binary's name in platform's archive.
func pluginBinary(platform string) string {
	if strings.HasPrefix(platform, "windows/") {
		return "kubectl-migranet.exe"
	}
	return "kubectl-migranet"
}

// TestCLIArchives: each platform's archive holds kubectl-migranet (.exe on windows, 0755) and
// LICENSE (0644), root's, at the commit's time, and nothing else; the binary is built for that
// platform (its executable format and machine, and its Go build information: GOOS, GOARCH,
// CGO_ENABLED=0, -trimpath) and stamped with the release's version and HEAD's commit. The fault it
// catches is an archive kubectl or krew cannot use (a folder inside, another binary name, no
// execute bit), a binary for another platform (one GOOS/GOARCH missed by the loop), a dynamic or
// unstamped build, or an archive that varies with the clock or the builder.
func TestCLIArchives(t *testing.T) {
	dir := theRelease(t)
	license, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	commit, when := headCommit(t), commitTime(t)
	for _, platform := range cliPlatforms() {
		t.Run(platform, func(t *testing.T) {
			entries := readCLIArchive(t, dir, platform)
			if len(entries) != 2 || entries[0].name != pluginBinary(platform) || entries[1].name != "LICENSE" {
				var names []string
				for _, e := range entries {
					names = append(names, e.name)
				}
				t.Fatalf("%s holds %q, want [%s LICENSE]", cliArchive(platform), names, pluginBinary(platform))
			}
			for i, want := range []os.FileMode{0o755, 0o644} {
				e := entries[i]
				if e.mode != want || (e.owner != "" && e.owner != "0:0") || !e.mtime.Equal(when) {
					t.Errorf("%s: mode %v owner %q time %v, want %v root's at the commit's %v", e.name, e.mode, e.owner, e.mtime, want, when)
				}
			}
			if !bytes.Equal(entries[1].data, license) {
				t.Errorf("LICENSE is not the repository's")
			}
			checkBuild(t, platform, entries[0].data, commit)
		})
	}
}

// checkBuild checks that binary is built for platform (executable format, machine, Go build
// information) and stamped with the release's version and commit (its data holds both).
func checkBuild(t *testing.T, platform string, binary []byte, commit string) {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "/")
	r := bytes.NewReader(binary)
	var machine string
	switch goos {
	case "linux":
		if f, err := elf.NewFile(r); err == nil {
			machine = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		}
	case "darwin":
		if f, err := macho.NewFile(r); err == nil {
			machine = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		}
	case "windows":
		if f, err := pe.NewFile(r); err == nil {
			machine = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		}
	}
	if machine != goarch {
		t.Errorf("the binary is not a %s executable for %s (read machine %q)", goos, goarch, machine)
	}
	bi, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("no Go build information: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("build setting %s=%q, want %q", k, settings[k], want)
		}
	}
	if bi.Path != "github.com/migranet/migranet/cmd/migranet" {
		t.Errorf("built from %q, want github.com/migranet/migranet/cmd/migranet", bi.Path)
	}
	// cmd/go records no -ldflags under -trimpath (they may hold paths: go.dev/issue/52372), so the
	// -X stamp is checked in the binary's data: the version and commit strings are there. The
	// binaries run here (linux/amd64 natively, linux/arm64 under QEMU) print them too.
	for what, want := range map[string]string{"version": testVersion, "commit": commit} {
		if !bytes.Contains(binary, []byte(want)) {
			t.Errorf("the binary does not hold the release's %s %q: not stamped with -X main.release...", what, want)
		}
	}
}

// TestCLIRunsAsThePlugin: the host's binary (linux/amd64), unpacked from its archive as
// kubectl-migranet, says the release's version and commit, and its help names the commands as
// `kubectl migranet ...`; the same bytes named migranet say `migranet ...`. The fault it catches
// is a plugin whose help tells the admin to type a command they do not have (migranet, when only
// kubectl-migranet is on PATH), or a binary that only knows its name from the build.
func TestCLIRunsAsThePlugin(t *testing.T) {
	entries := readCLIArchive(t, theRelease(t), "linux/amd64")
	bin := t.TempDir()
	for _, name := range []string{"kubectl-migranet", "migranet"} {
		if err := os.WriteFile(filepath.Join(bin, name), entries[0].data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	checkVersionJSON(t, filepath.Join(bin, "kubectl-migranet"))
	for name, want := range map[string]string{"kubectl-migranet": "  kubectl migranet status [flags]", "migranet": "\n  migranet status [flags]"} {
		out, err := exec.Command(filepath.Join(bin, name), "help").Output()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s help: %v: want %q in\n%s", name, err, want, out)
		}
	}
}
