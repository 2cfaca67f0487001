package upgrade

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/migranet/migranet/test/cluster"
)

// Release is a release CHANGELOG.md names: its version and the commit it was cut from.
type Release struct{ Version, Commit string }

// releases lists the releases a changelog names, newest first (its order): every heading
// "## vX.Y.Z ... commit <hash>".
func Releases(changelog string) []Release {
	heading := regexp.MustCompile(`(?m)^## (v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)\b[^\n]*\bcommit ([0-9a-f]{7,40})\b`)
	var out []Release
	for _, m := range heading.FindAllStringSubmatch(changelog, -1) {
		out = append(out, Release{Version: m[1], Commit: m[2]})
	}
	return out
}

// git runs git in the checkout and returns its trimmed output.
func git(ctx context.Context, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", cluster.RepoRoot()}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// RenderAt renders the default overlay (kubectl kustomize manifests/) of commit, or of the work
// tree when commit is "", with every container's image set to image.
func RenderAt(ctx context.Context, kubectl, commit, image string) ([]byte, error) {
	dir := filepath.Join(cluster.RepoRoot(), "manifests")
	if commit != "" {
		tmp, err := os.MkdirTemp("", "migranet-upgrade-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" manifests | tar -x -C "$3"`, "sh", cluster.RepoRoot(), commit, tmp)
		if out, err := archive.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git archive %s manifests: %v: %s", commit, err, out)
		}
		dir = filepath.Join(tmp, "manifests")
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize manifests/ at %q: %v: %s", commit, err, stderr.String())
	}
	if image == "" {
		return out.Bytes(), nil
	}
	return bytes.ReplaceAll(out.Bytes(), []byte("image: migranet:dev"), []byte("image: "+image)), nil
}

// From is what an upgrade starts from.
type From struct {
	Commit string
	Why    string // which commit, and why that one
}

// PreviousRelease picks the commit to upgrade from: the newest release in CHANGELOG.md whose
// manifests render differently from the work tree's (HEAD while CHANGELOG.md names no release).
// Right after a release's entry is written its manifests are the work tree's, so the upgrade runs
// from the release before it (v0.1.0 once v0.2.0 is recorded) to the work tree, which renders as
// the newest release. While every release renders as the work tree (one release, not yet
// followed by a manifest change): the newest commit before the newest release whose manifests
// render differently.
func PreviousRelease(ctx context.Context, kubectl string) (From, error) {
	changelog, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "CHANGELOG.md"))
	if err != nil {
		return From{}, err
	}
	rels := Releases(string(changelog))
	if len(rels) == 0 {
		// No release named yet (the commit that cuts the first one cannot name itself): HEAD.
		rels = []Release{{Version: "HEAD (CHANGELOG.md names no release with its commit yet)", Commit: "HEAD"}}
	}
	for _, r := range rels {
		if _, err := git(ctx, "cat-file", "-e", r.Commit+"^{commit}"); err != nil {
			return From{}, fmt.Errorf("CHANGELOG.md's %s names commit %s, which this clone does not hold (a squash or a rebase lost it?): %w", r.Version, r.Commit, err)
		}
	}
	current, err := RenderAt(ctx, kubectl, "", "")
	if err != nil {
		return From{}, err
	}
	render := func(commit string) ([]byte, error) { return RenderAt(ctx, kubectl, commit, "") }
	if from, ok, err := chooseRelease(rels, current, render); err != nil || ok {
		return from, err
	}
	newest := rels[0]
	log, err := git(ctx, "log", "--format=%H", "-n", "200", newest.Commit+"^", "--", "manifests")
	if err != nil {
		return From{}, err
	}
	for _, c := range strings.Fields(log) {
		at, err := RenderAt(ctx, kubectl, c, "")
		if err != nil {
			return From{}, err
		}
		if !bytes.Equal(at, current) {
			return From{Commit: c, Why: fmt.Sprintf("commit %s: %s's manifests are the current ones, and this is the newest commit before it whose manifests differ", c, newest.Version)}, nil
		}
	}
	return From{}, fmt.Errorf("no commit before %s renders other manifests: nothing to upgrade from", newest.Version)
}

// chooseRelease picks, among rels (newest first), the newest release whose manifests (render of
// its commit) differ from current; ok is false when every one renders as current.
func chooseRelease(rels []Release, current []byte, render func(commit string) ([]byte, error)) (From, bool, error) {
	var same []string
	for _, r := range rels {
		at, err := render(r.Commit)
		if err != nil {
			return From{}, false, err
		}
		if bytes.Equal(at, current) {
			same = append(same, r.Version)
			continue
		}
		why := fmt.Sprintf("%s (commit %s), the newest release in CHANGELOG.md", r.Version, r.Commit)
		if len(same) > 0 {
			why = fmt.Sprintf("%s (commit %s), the newest release in CHANGELOG.md whose manifests differ from the current ones (%s render as the current ones: the upgrade runs to them)",
				r.Version, r.Commit, strings.Join(same, ", "))
		}
		return From{Commit: r.Commit, Why: why}, true, nil
	}
	return From{}, false, nil
}

// Build is a release as the upgrade suite runs it: the migranet binary, reporting Version, and
// the folder of its manifests.
type Build struct{ Binary, Manifests, Version string }

// BuildAt builds commit's cmd/migranet (the work tree's when commit is "") into dir, stamped with
// version the way `make build` stamps a release, and returns it with commit's manifests folder.
// A commit is extracted with git archive and built with its own go.mod. The build is kept between
// runs (cluster.KeptBuild): a commit's source is extracted once, and go build links again only
// when a source (or the toolchain) changed.
func BuildAt(ctx context.Context, commit, dir, version string) (Build, error) {
	b := Build{Binary: filepath.Join(dir, "migranet"), Manifests: filepath.Join(cluster.RepoRoot(), "manifests"), Version: version}
	what, hash := "release-worktree-"+version, ""
	if commit != "" {
		var err error
		if hash, err = git(ctx, "rev-parse", commit+"^{commit}"); err != nil {
			return Build{}, err
		}
		what = "release-" + hash[:12] + "-" + version
	}
	err := cluster.KeptBuild(what, "migranet", b.Binary, func(kept string) error {
		src := cluster.RepoRoot()
		if commit != "" {
			src = filepath.Join(kept, "src")
			if err := extract(ctx, hash, src); err != nil {
				return err
			}
			b.Manifests = filepath.Join(src, "manifests")
		}
		stamp := "-X main.releaseVersion=" + version + " -X main.releaseCommit=" + commit
		cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", stamp, "-o", filepath.Join(kept, "migranet"), "./cmd/migranet")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/migranet at %q: %v\n%s", commit, err, out)
		}
		return nil
	})
	return b, err
}

// extract writes commit's tree into src (git archive) unless an earlier run did.
func extract(ctx context.Context, commit, src string) error {
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
		return nil
	}
	tmp := src + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", cluster.RepoRoot(), commit, tmp)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", commit, err, out)
	}
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	return os.Rename(tmp, src)
}
