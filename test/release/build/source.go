package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// source is the commit a release is cut from.
type source struct {
	commit string    // full hash
	time   time.Time // the commit's committer time: every timestamp in the release
	dirty  bool      // the work tree had changes the release leaves out
}

// git runs git in the repository at repo and returns its trimmed stdout.
func git(repo string, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// resolve names the commit rev points at and its time.
func resolve(repo, rev string) (source, error) {
	commit, err := git(repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return source{}, err
	}
	ct, err := git(repo, "show", "-s", "--format=%ct", commit)
	if err != nil {
		return source{}, err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return source{}, fmt.Errorf("commit time of %s: %q: %w", commit, ct, err)
	}
	status, err := git(repo, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return source{}, err
	}
	return source{commit: commit, time: time.Unix(secs, 0).UTC(), dirty: status != ""}, nil
}

// extract writes the tree of commit (git archive) under dir.
func extract(repo, commit, dir string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("git", "-C", repo, "archive", "--format=tar", commit)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	xerr := untar(out, dir)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", commit, err, strings.TrimSpace(stderr.String()))
	}
	return xerr
}

// untar writes a git archive's directories, files and symbolic links under dir.
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
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("git archive: unsafe path %q", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, path)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
