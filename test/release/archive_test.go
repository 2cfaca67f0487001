package release

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// archiveName is the image archive's name in a release folder.
func archiveName(version string) string { return "migranet-" + version + ".oci.tar" }

// loadArchive unpacks the release's image archive and loads it as an OCI image layout: the one
// image index its index.json names by the release's version.
func loadArchive(t *testing.T, dir, version string) (v1.ImageIndex, v1.Descriptor) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, archiveName(version)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unpacked := t.TempDir()
	if err := untar(f, unpacked); err != nil {
		t.Fatalf("unpacking %s: %v", archiveName(version), err)
	}
	lp, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatalf("%s is not an OCI image layout: %v", archiveName(version), err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want the release's one image index", len(im.Manifests))
	}
	desc := im.Manifests[0]
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatalf("image index %s of the layout (index.json's entry is %s): %v", desc.Digest, desc.MediaType, err)
	}
	return idx, desc
}

// platformImage is the image idx lists for linux/arch, and its descriptor there.
func platformImage(t *testing.T, idx v1.ImageIndex, arch string) (v1.Image, v1.Descriptor) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatalf("image %s (linux/%s) of the index: %v", d.Digest, arch, err)
			}
			return img, d
		}
	}
	t.Fatalf("the image index lists no linux/%s image: %v", arch, im.Manifests)
	return nil, v1.Descriptor{}
}

// untar writes a tar's directories and regular files under dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return errors.New("unsafe path " + h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
		default:
			err = errors.New("unexpected entry " + h.Name)
		}
		if err != nil {
			return err
		}
	}
}

// layerFiles reads the image's one layer: every entry's header, and the content of /migranet.
func layerFiles(t *testing.T, img v1.Image) ([]*tar.Header, []byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("the image has %d layers, want 1 (the Dockerfile's COPY on scratch)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var headers []*tar.Header
	var binary []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, binary
		} else if err != nil {
			t.Fatalf("reading the layer: %v", err)
		}
		headers = append(headers, h)
		if filepath.Clean("/"+h.Name) == "/migranet" {
			if binary, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}
