package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"time"
)

// cliArchiveName is the name of p's CLI archive: krew's platforms each download one archive, and an
// admin picks theirs by the OS and architecture in its name (uname -s, uname -m spelled as Go does).
func cliArchiveName(version string, p platform) string {
	ext := ".tar.gz"
	if p.os == "windows" {
		ext = ".zip"
	}
	return "kubectl-migranet_" + version + "_" + p.os + "_" + p.arch + ext
}

// archiveEntry is one file of a CLI archive.
type archiveEntry struct {
	name string
	mode int64
	data []byte
}

// cliArchive writes p's CLI archive at path: the binary as kubectl-migranet (.exe on windows),
// mode 0755, and LICENSE, 0644, in that order, root's, modified at t. tar.gz for linux and darwin,
// zip for windows (both krew can unpack). Nothing else in them varies: the same binary gives the
// same archive.
func cliArchive(path, binary, license string, p platform, t time.Time) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	lic, err := os.ReadFile(license)
	if err != nil {
		return err
	}
	entries := []archiveEntry{{pluginName(p), 0o755, bin}, {filepath.Base(license), 0o644, lic}}
	var data []byte
	if p.os == "windows" {
		data, err = zipOf(entries, t)
	} else {
		data, err = tarGzOf(entries, t)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// tarGzOf is a gzip-compressed tar of entries, with no name or time in the gzip header.
func tarGzOf(entries []archiveEntry, t time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: t, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipOf is a deflated zip of entries.
func zipOf(entries []archiveEntry, t time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: t}
		h.SetMode(os.FileMode(e.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
