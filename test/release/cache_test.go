package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/migranet/migranet/test/cluster"
)

// The unsigned cut every check reads is kept between runs, by what makes it: cross-compiling five
// binaries is most of this suite's time. The signed cut is made anew every run, so the
// reproducibility check always compares a fresh build with the kept one.

// cutCacheDir is where kept cuts live: MIGRANET_RELEASE_CACHE, "off" for none, else
// release-cuts in the cache test/tools/build.sh uses.
func cutCacheDir() string {
	switch v := os.Getenv("MIGRANET_RELEASE_CACHE"); v {
	case "off":
		return ""
	case "":
	default:
		return v
	}
	base := os.Getenv("MIGRANET_CACHE")
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(c, "migranet")
	}
	return filepath.Join(base, "release-cuts")
}

// cutKey names what the unsigned test cut is made of: HEAD's commit (the tree it is cut from),
// the Go toolchain, and the release machinery as the work tree holds it (test/release/build,
// go.mod, go.sum, the Makefile, test/tools/build.sh), so a changed builder is never answered with
// an old cut.
func cutKey() (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, testVersion, testRegistry, testBaseURL)
	for _, args := range [][]string{{"git", "-C", cluster.RepoRoot(), "rev-parse", "HEAD"}, {"go", "version"}} {
		out, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
		h.Write(out)
	}
	files, err := filepath.Glob(filepath.Join(cluster.RepoRoot(), "test", "release", "build", "*.go"))
	if err != nil {
		return "", err
	}
	for _, rel := range []string{"go.mod", "go.sum", "Makefile", "test/tools/build.sh"} {
		files = append(files, filepath.Join(cluster.RepoRoot(), rel))
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(h, filepath.Base(f))
		_, err = io.Copy(h, fh)
		_ = fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// keptCut returns the kept unsigned cut of this state, cutting and keeping it when there is none
// (the cache then holds this one only). ok is false when no cache is used.
func keptCut() (c cut, ok bool) {
	cache := cutCacheDir()
	if cache == "" {
		return cut{}, false
	}
	key, err := cutKey()
	if err != nil {
		return cut{err: err}, true
	}
	dir := filepath.Join(cache, key)
	if out, err := os.ReadFile(filepath.Join(dir, "make-release.out")); err == nil {
		return cut{dir: filepath.Join(dir, testVersion), output: string(out), kept: true}, true
	}
	_ = os.RemoveAll(cache)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return cut{err: err}, true
	}
	tmp, err := os.MkdirTemp(cache, ".cut-")
	if err != nil {
		return cut{err: err}, true
	}
	c = makeRelease(tmp, testVersion)
	if c.err != nil {
		return c, true
	}
	if err := os.WriteFile(filepath.Join(tmp, "make-release.out"), []byte(c.output), 0o644); err != nil {
		return cut{err: err}, true
	}
	if err := os.Rename(tmp, dir); err != nil {
		return cut{err: err}, true
	}
	return cut{dir: filepath.Join(dir, testVersion), output: c.output, kept: true}, true
}
