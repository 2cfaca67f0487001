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

	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestArchiveIsAValidOCILayout: the fault it catches is an archive a registry tool cannot take:
// not an OCI layout at its root (a docker-save tarball, a folder inside the tar), a blob whose
// digest or size does not match its descriptor, docker media types, or an index that does not name
// the image by the release's version (`skopeo copy oci-archive:` looks it up by that name).
func TestArchiveIsAValidOCILayout(t *testing.T) {
	dir := theRelease(t)
	img, desc := loadArchive(t, dir, testVersion)
	if err := validate.Image(img); err != nil {
		t.Fatalf("go-containerregistry's validate.Image: %v", err)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index entry media type %s, want %s", desc.MediaType, types.OCIManifestSchema1)
	}
	if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != testVersion {
		t.Errorf("index entry ref.name %q, want %q", got, testVersion)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != "amd64" {
		t.Errorf("index entry platform %v, want linux/amd64", desc.Platform)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("manifest: config %s, layers %v; want an OCI config and one OCI gzip layer", m.Config.MediaType, m.Layers)
	}
}

// TestImageIsTheDockerfiles: the fault it catches is an image that drifts from the Dockerfile the
// Deployment's securityContext was written for: another user (runAsNonRoot refuses root), another
// entrypoint or path, another platform, a second file or a base image under the binary.
func TestImageIsTheDockerfiles(t *testing.T) {
	img, _ := loadArchive(t, theRelease(t), testVersion)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
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
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("/migranet is built for %s, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/migranet asks for a dynamic loader (built with cgo?): the empty base has none")
		}
	}
}

// TestBinaryReportsTheRelease: the fault it catches is a binary that does not know which release
// it is: the -X flags missing or naming the wrong variables (it would print a pseudo-version or
// "(devel)"), the version or the commit not the ones released.
func TestBinaryReportsTheRelease(t *testing.T) {
	img, _ := loadArchive(t, theRelease(t), testVersion)
	_, binary := layerFiles(t, img)
	path := filepath.Join(t.TempDir(), "migranet")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("/migranet version -o json: %v", err)
	}
	var got struct{ Version, Commit string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version -o json printed %q: %v", out, err)
	}
	if want := headCommit(t); got.Version != testVersion || got.Commit != want {
		t.Errorf("the image's binary says version %q commit %q, want %q %q", got.Version, got.Commit, testVersion, want)
	}
	text, err := exec.Command(path, "version").Output()
	if err != nil || !bytes.HasPrefix(text, []byte("migranet "+testVersion+"\n")) {
		t.Errorf("/migranet version printed %q (%v), want it to start with \"migranet %s\"", text, err, testVersion)
	}
}
