package release

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushKeepsTheDigest: the archive, unpacked and pushed as docs/install.md says with crane
// (`crane push FOLDER REF`, no --index: crane's loadImage takes the layout's one entry, the image
// index, and remote.WriteIndex pushes it), lands in a registry (go-containerregistry's own, on
// loopback) under the digest migranet.yaml pins, and each platform pulls its own image from it.
// The fault it catches is an archive whose push changes the digest (the layout's index.json
// pushed instead of the image index, several entries so crane wants --index) or an index a
// node of one architecture resolves to the other's image.
func TestPushKeepsTheDigest(t *testing.T) {
	dir := theRelease(t)
	want := imageDigest(t, dir)
	f, err := os.Open(filepath.Join(dir, archiveName(testVersion)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unpacked := t.TempDir()
	if err := untar(f, unpacked); err != nil {
		t.Fatal(err)
	}
	// crane push's loadImage for a folder, without --index.
	l, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("the layout lists %v: crane push would want --index or push a single image", m.Manifests)
	}
	idx, err := l.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://")+"/migranet:"+testVersion, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("pushing the index: %v", err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != want {
		t.Errorf("the registry holds %s under %s, migranet.yaml pins %s", desc.Digest, ref, want)
	}
	for arch := range imageArches() {
		img, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatalf("pulling linux/%s: %v", arch, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch {
			t.Errorf("a linux/%s node pulls an image for %s", arch, cfg.Architecture)
		}
	}
}
