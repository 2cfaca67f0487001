package main

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// refNameAnnotation names the image in the layout's index, so `skopeo copy oci-archive:FILE` and
// `crane push` find it by the release's version.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// writeArchive writes idx as an OCI image layout (index.json naming it by version) into a tar at
// path, via the scratch folder dir. The tar's entries are in lexical order, root's, at t.
func writeArchive(idx v1.ImageIndex, version string, t time.Time, dir, path string) error {
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: version})); err != nil {
		return err
	}
	return tarFolder(dir, path, t)
}

// tarFolder writes the folder dir into a tar at path, deterministically: WalkDir's lexical order,
// fixed owner, modes and times.
func tarFolder(dir, path string, t time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: t, Format: tar.FormatUSTAR}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if walkErr != nil {
		_ = f.Close()
		return walkErr
	}
	if err := tw.Close(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
