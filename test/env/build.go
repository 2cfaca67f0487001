package env

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/migranet/migranet/test/cluster"
)

// BuildMigranet builds this checkout's cmd/migranet and copies it into dir, returning the copy's
// path. The build is kept between suites (cluster.KeptBuild): go build links again only when a
// source changed, so every suite of a `make test` after the first copies the binary instead of
// linking it (a link is 10-40 s on 2 cores, by load).
func BuildMigranet(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "migranet")
	return out, cluster.KeptBuild("migranet", "migranet", out, func(kept string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(kept, "migranet"), "./cmd/migranet")
		cmd.Dir = cluster.RepoRoot()
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/migranet: %v\n%s", err, b)
		}
		return nil
	})
}
