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

// release is a release CHANGELOG.md names: its version and the commit it was cut from.
type release struct{ version, commit string }

// releases lists the releases a changelog names, newest first (its order): every heading
// "## vX.Y.Z ... commit <hash>".
func releases(changelog string) []release {
	heading := regexp.MustCompile(`(?m)^## (v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)\b[^\n]*\bcommit ([0-9a-f]{7,40})\b`)
	var out []release
	for _, m := range heading.FindAllStringSubmatch(changelog, -1) {
		out = append(out, release{version: m[1], commit: m[2]})
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

// renderAt renders the default overlay (kubectl kustomize manifests/) of commit, or of the work
// tree when commit is "", with every container's image set to image.
func renderAt(ctx context.Context, kubectl, commit, image string) ([]byte, error) {
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

// from is what the upgrade starts from.
type from struct {
	commit string
	why    string // which commit, and why that one
}

// previousRelease picks the commit to upgrade from: the newest release in CHANGELOG.md (HEAD while
// it names none); while its manifests render the same as the work tree's (no second release yet),
// the newest commit before it whose manifests render differently.
func previousRelease(ctx context.Context, kubectl string) (from, error) {
	changelog, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "CHANGELOG.md"))
	if err != nil {
		return from{}, err
	}
	rels := releases(string(changelog))
	if len(rels) == 0 {
		// No release named yet (the commit that cuts the first one cannot name itself): HEAD.
		rels = []release{{version: "HEAD (CHANGELOG.md names no release with its commit yet)", commit: "HEAD"}}
	}
	newest := rels[0]
	if _, err := git(ctx, "cat-file", "-e", newest.commit+"^{commit}"); err != nil {
		return from{}, fmt.Errorf("CHANGELOG.md's %s names commit %s, which this clone does not hold (a squash or a rebase lost it?): %w", newest.version, newest.commit, err)
	}
	current, err := renderAt(ctx, kubectl, "", "")
	if err != nil {
		return from{}, err
	}
	at, err := renderAt(ctx, kubectl, newest.commit, "")
	if err != nil {
		return from{}, err
	}
	if !bytes.Equal(at, current) {
		return from{commit: newest.commit, why: fmt.Sprintf("%s (commit %s), the newest release in CHANGELOG.md", newest.version, newest.commit)}, nil
	}
	log, err := git(ctx, "log", "--format=%H", "-n", "200", newest.commit+"^", "--", "manifests")
	if err != nil {
		return from{}, err
	}
	for _, c := range strings.Fields(log) {
		at, err := renderAt(ctx, kubectl, c, "")
		if err != nil {
			return from{}, err
		}
		if !bytes.Equal(at, current) {
			return from{commit: c, why: fmt.Sprintf("commit %s: %s's manifests are the current ones, and this is the newest commit before it whose manifests differ", c, newest.version)}, nil
		}
	}
	return from{}, fmt.Errorf("no commit before %s renders other manifests: nothing to upgrade from", newest.version)
}
