package rolling

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/results"
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

func TestRolling(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet rolling upgrade")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "migranet-rolling-")
	Expect(err).NotTo(HaveOccurred())
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
	f = framework.Start(env.Options{Dir: filepath.Join(dir, "cluster"), Binary: previous.Binary,
		Release: env.Release{Manifests: previous.Manifests, Image: previousImage}})
	f.ProbeAgents.Image(previousImage, previous.Binary)
	f.ProbeAgents.Image(currentImage, current.Binary)
}, NodeTimeout(25*time.Minute))

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
