package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// platform is what a binary runs on.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// platforms are the ones a release builds the binary for, in this order: the CLI archive of each,
// and the image of each linux one.
func platforms() []platform {
	return []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}
}

// imagePlatforms are the platforms of the image index: the nodes migranet runs on.
func imagePlatforms() []platform {
	var out []platform
	for _, p := range platforms() {
		if p.os == "linux" {
			out = append(out, p)
		}
	}
	return out
}

// pluginName is the binary's name in a CLI archive: kubectl finds a plugin `kubectl migranet` as
// kubectl-migranet on PATH (with .exe on windows).
func pluginName(p platform) string {
	if p.os == "windows" {
		return "kubectl-migranet.exe"
	}
	return "kubectl-migranet"
}

// buildBinary builds cmd/migranet of the tree at src for p the way the Dockerfile does
// (CGO_ENABLED=0, -trimpath, -s -w) with the -X flags `make build` stamps the version and commit
// with, into out. The same tree, version, commit, platform and Go toolchain give the same bytes.
func buildBinary(src, out string, p platform, version, commit string) error {
	ldflags := "-s -w -X main.releaseVersion=" + version + " -X main.releaseCommit=" + commit
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/migranet")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/migranet (%s): %v\n%s", p, err, stderr.String())
	}
	if _, err := os.Stat(filepath.Clean(out)); err != nil {
		return fmt.Errorf("go build wrote no binary: %w", err)
	}
	return nil
}
