package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The Dockerfile's final stage, as the image's config says it.
const (
	binaryPath = "migranet" // in the layer: /migranet
	imageUser  = "65532:65532"
	entrypoint = "/migranet"
)

// image is the Dockerfile's image with binary (a file) as /migranet: an OCI manifest on no base,
// one gzip layer, every timestamp at t. The version and commit go into the standard labels.
func image(binary string, p platform, t time.Time, version, commit string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(binary, t) },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.arch,
		OS:           p.os,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       imageUser,
			Entrypoint: []string{entrypoint},
			Labels: map[string]string{
				"org.opencontainers.image.title":    "migranet",
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: t}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "COPY /out/migranet /migranet (make release " + version + ")"}})
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, created)
}

// imageIndex is the multi-architecture image: an OCI image index listing imgs, each with its
// platform, in the order of imagePlatforms.
func imageIndex(imgs []v1.Image, ps []platform) (v1.ImageIndex, error) {
	if len(imgs) != len(ps) {
		return nil, fmt.Errorf("%d images for %d platforms", len(imgs), len(ps))
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range imgs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: ps[i].os, Architecture: ps[i].arch}}})
	}
	return idx, nil
}

// layerTar is the layer's content: /migranet, root's, mode 0755, modified at t. Nothing else in
// the header varies, so the same binary always gives the same layer.
func layerTar(binary string, t time.Time) (io.ReadCloser, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: binaryPath, Mode: 0o755, Size: int64(len(data)), ModTime: t, Format: tar.FormatUSTAR}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return io.NopCloser(&buf), nil
}
