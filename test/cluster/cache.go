package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// CacheDir is the cache test/tools/build.sh builds the tools into, outside the work tree:
// $MIGRANET_CACHE, else migranet in the user's cache folder ($XDG_CACHE_HOME or ~/.cache).
func CacheDir() (string, error) {
	if dir := os.Getenv("MIGRANET_CACHE"); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "migranet"), nil
}

// KeptBuild runs build in the folder this checkout keeps in the tool cache for the build named
// what (<cache>/build/<what>-<hash of the checkout's path>), holding a lock on it so that suites
// run side by side take turns, then copies the file named file from there to dst. build is to
// do only what is stale (go build links again only when a source changed): the folder stays
// between runs. The caller runs its own copy, so a later build never replaces a running binary.
func KeptBuild(what, file, dst string, build func(kept string) error) error {
	cache, err := CacheDir()
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(RepoRoot()))
	kept := filepath.Join(cache, "build", what+"-"+hex.EncodeToString(sum[:])[:12])
	if err := os.MkdirAll(kept, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(kept, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", kept, err)
	}
	if err := build(kept); err != nil {
		return err
	}
	return copyExecutable(filepath.Join(kept, file), dst)
}

// copyExecutable copies the file src to dst (its folder created), mode 0755.
func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
