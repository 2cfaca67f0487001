package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// platform is what the image runs on.
type platform struct{ os, arch string }

// buildBinary builds cmd/migranet of the tree at src the way the Dockerfile does (CGO_ENABLED=0,
// -trimpath, -s -w) with the -X flags `make build` stamps the version and commit with, into out.
func buildBinary(src, out string, p platform, version, commit string) error {
	ldflags := "-s -w -X main.releaseVersion=" + version + " -X main.releaseCommit=" + commit
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/migranet")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/migranet (%s/%s): %v\n%s", p.os, p.arch, err, stderr.String())
	}
	if _, err := os.Stat(filepath.Clean(out)); err != nil {
		return fmt.Errorf("go build wrote no binary: %w", err)
	}
	return nil
}
