package upgrade

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/results"
)

var c *cluster.Cluster

func TestUpgrade(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet upgrade")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "migranet-upgrade-")
	Expect(err).NotTo(HaveOccurred())
	bins, err := cluster.BuildBinaries(ctx)
	Expect(err).NotTo(HaveOccurred())
	c, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Binaries: bins, Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		c.Stop()
		if !CurrentSpecReport().Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	// migranet extends an existing KubeVirt: its namespace is there before the install.
	Expect(cluster.BootstrapKubeVirt(ctx, c.Client)).To(Succeed())
	Expect(cluster.CreateNodes(ctx, c.Client, cluster.DefaultNodes(2))).To(Succeed())
	// The local cluster starts with the current tree's migranet CRDs (test/cluster.InstallCRDs):
	// a cluster the previous release was installed on has that release's.
	Expect(c.DeleteCRDsOfGroup(ctx, "migranet.io")).To(Succeed())
}, NodeTimeout(10*time.Minute))
