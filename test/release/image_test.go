package release

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// imageArches are the image index's platforms (linux), with the ELF machine each binary is for.
func imageArches() map[string]elf.Machine {
	return map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
}

// TestArchiveIsAValidOCILayout: the fault it catches is an archive a registry tool cannot take:
// not an OCI layout at its root (a docker-save tarball, a folder inside the tar), a blob whose
// digest or size does not match its descriptor, docker media types, an index.json that names a
// single image instead of the image index, or does not name it by the release's version (`skopeo
// copy oci-archive:` looks it up by that name), or an image index without both platforms (an
// arm64 node would pull nothing) or with a platform the image does not say it is.
func TestArchiveIsAValidOCILayout(t *testing.T) {
	dir := theRelease(t)
	idx, desc := loadArchive(t, dir, testVersion)
	if err := validate.Index(idx); err != nil {
		t.Fatalf("go-containerregistry's validate.Index: %v", err)
	}
	if desc.MediaType != types.OCIImageIndex {
		t.Errorf("index.json's entry: media type %s, want %s (the multi-architecture image)", desc.MediaType, types.OCIImageIndex)
	}
	if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != testVersion {
		t.Errorf("index.json's entry: ref.name %q, want %q", got, testVersion)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != len(imageArches()) {
		t.Errorf("image index: media type %s, %d manifests; want %s listing linux/amd64 and linux/arm64", im.MediaType, len(im.Manifests), types.OCIImageIndex)
	}
	for arch := range imageArches() {
		img, d := platformImage(t, idx, arch)
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("linux/%s: media type %s, want %s", arch, d.MediaType, types.OCIManifestSchema1)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != "linux" || cfg.Architecture != arch {
			t.Errorf("the index's linux/%s entry is an image whose config says %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
			t.Errorf("linux/%s manifest: config %s, layers %v; want an OCI config and one OCI gzip layer", arch, m.Config.MediaType, m.Layers)
		}
	}
}

// TestImageIsTheDockerfiles: the fault it catches is an image that drifts from the Dockerfile the
// Deployment's securityContext was written for, on either platform: another user (runAsNonRoot
// refuses root), another entrypoint or path, a binary built for the other architecture (an arm64
// node would fail with "exec format error"), a second file or a base image under the binary, cgo.
func TestImageIsTheDockerfiles(t *testing.T) {
	idx, _ := loadArchive(t, theRelease(t), testVersion)
	for arch, machine := range imageArches() {
		t.Run(arch, func(t *testing.T) {
			img, _ := platformImage(t, idx, arch)
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Config.User != "65532:65532" {
				t.Errorf("USER %q, want 65532:65532 (Dockerfile)", cfg.Config.User)
			}
			if !slices.Equal(cfg.Config.Entrypoint, []string{"/migranet"}) || len(cfg.Config.Cmd) != 0 {
				t.Errorf("ENTRYPOINT %q CMD %q, want [/migranet] and none", cfg.Config.Entrypoint, cfg.Config.Cmd)
			}
			if got := cfg.Config.Labels["org.opencontainers.image.version"]; got != testVersion {
				t.Errorf("label org.opencontainers.image.version %q, want %q", got, testVersion)
			}
			headers, binary := layerFiles(t, img)
			if len(headers) != 1 || filepath.Clean("/"+headers[0].Name) != "/migranet" {
				var names []string
				for _, h := range headers {
					names = append(names, h.Name)
				}
				t.Fatalf("layer entries %q, want /migranet alone", names)
			}
			h := headers[0]
			if h.Mode&0o777 != 0o755 || h.Uid != 0 || h.Gid != 0 {
				t.Errorf("/migranet mode %o owner %d:%d, want 755 root's (readable and executable by 65532)", h.Mode, h.Uid, h.Gid)
			}
			f, err := elf.NewFile(bytes.NewReader(binary))
			if err != nil {
				t.Fatalf("/migranet is not an ELF binary: %v", err)
			}
			defer f.Close()
			if f.Machine != machine {
				t.Errorf("/migranet is built for %s, want %s", f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("/migranet asks for a dynamic loader (built with cgo?): the empty base has none")
				}
			}
		})
	}
}

// imageBinary writes the /migranet of the index's linux/arch image to a file and returns its path.
func imageBinary(t *testing.T, arch string) string {
	t.Helper()
	idx, _ := loadArchive(t, theRelease(t), testVersion)
	img, _ := platformImage(t, idx, arch)
	_, binary := layerFiles(t, img)
	path := filepath.Join(t.TempDir(), "migranet")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkVersionJSON runs `version -o json` with run (the binary, or QEMU and the binary) and checks
// it names the release's version and HEAD's commit.
func checkVersionJSON(t *testing.T, run ...string) {
	t.Helper()
	out, err := exec.Command(run[0], append(run[1:], "version", "-o", "json")...).Output()
	if err != nil {
		t.Fatalf("%q version -o json: %v", run, err)
	}
	var got struct{ Version, Commit string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version -o json printed %q: %v", out, err)
	}
	if want := headCommit(t); got.Version != testVersion || got.Commit != want {
		t.Errorf("%q says version %q commit %q, want %q %q", run, got.Version, got.Commit, testVersion, want)
	}
}

// TestBinaryReportsTheRelease: the fault it catches is a binary that does not know which release
// it is: the -X flags missing or naming the wrong variables (it would print a pseudo-version or
// "(devel)"), the version or the commit not the ones released.
func TestBinaryReportsTheRelease(t *testing.T) {
	path := imageBinary(t, "amd64")
	checkVersionJSON(t, path)
	text, err := exec.Command(path, "version").Output()
	if err != nil || !bytes.HasPrefix(text, []byte("migranet "+testVersion+"\n")) {
		t.Errorf("/migranet version printed %q (%v), want it to start with \"migranet %s\"", text, err, testVersion)
	}
}

// TestArm64ImageRuns: the arm64 image's binary, run under Debian's user-mode QEMU
// (qemu-user-static's qemu-aarch64-static, which hack/host-tools.sh test installs), prints the
// release's version and commit, and its help. The fault it catches is an arm64 image that only
// looks right: a binary that crashes on arm64 (a GOARM64 level or assembly the target lacks), an
// amd64 binary under the arm64 platform, or a binary built from another tree.
func TestArm64ImageRuns(t *testing.T) {
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Fatalf("qemu-aarch64-static is not installed (Debian's qemu-user-static; bash hack/host-tools.sh test installs it): %v", err)
	}
	path := imageBinary(t, "arm64")
	checkVersionJSON(t, qemu, path)
	out, err := exec.Command(qemu, path, "help").Output()
	if err != nil || !bytes.Contains(out, []byte("migranet probe [flags]")) {
		t.Errorf("qemu-aarch64-static /migranet help: %v\n%s", err, out)
	}
}

// imageDigest is the digest of the release's image index.
func imageDigest(t *testing.T, dir string) v1.Hash {
	t.Helper()
	idx, desc := loadArchive(t, dir, testVersion)
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d != desc.Digest {
		t.Fatalf("index.json names %s, the image index hashes to %s", desc.Digest, d)
	}
	return d
}
