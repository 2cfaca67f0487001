package rolling

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/upgrade"
)

// The images of the two releases: a pod's image says which binary its process runs.
const (
	previousImage = "example.invalid/migranet:previous"
	currentImage  = "example.invalid/migranet:current"
)

var (
	f                 *framework.Framework
	from              upgrade.From
	previous, current upgrade.Build
)

// The environment starts from the previous release: its binary and manifests.
func TestRolling(t *testing.T) {
	framework.RunSuite(t, "migranet rolling upgrade", &f, framework.Suite{
		Prepare: buildReleases,
		Started: func(_ context.Context, f *framework.Framework) {
			f.ProbeAgents.Image(previousImage, previous.Binary)
			f.ProbeAgents.Image(currentImage, current.Binary)
		},
		Timeout: 25 * time.Minute,
	})
}

// buildReleases builds the previous and the current release in dir and starts from the previous.
func buildReleases(ctx context.Context, dir string, opts *env.Options) {
	bins, err := cluster.BuildBinaries(ctx)
	Expect(err).NotTo(HaveOccurred())
	from, err = upgrade.PreviousRelease(ctx, bins.Kubectl)
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("upgrading from", from.Why)
	GinkgoWriter.Printf("upgrading from %s\n", from.Why)
	previous, err = upgrade.BuildAt(ctx, from.Commit, filepath.Join(dir, "previous"), "previous")
	Expect(err).NotTo(HaveOccurred())
	current, err = upgrade.BuildAt(ctx, "", filepath.Join(dir, "current"), "current")
	Expect(err).NotTo(HaveOccurred())
	opts.Binary, opts.Release = previous.Binary, env.Release{Manifests: previous.Manifests, Image: previousImage}
}
