package harvester

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/dynamic"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/results"
)

var (
	cl  *cluster.Cluster
	dyn dynamic.Interface
)

func TestHarvester(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet Harvester fixtures")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "migranet-harvester-")
	Expect(err).NotTo(HaveOccurred())
	cl, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred(), "starting the control plane")
	DeferCleanup(cl.Stop)
	Expect(cl.InstallCRDDir(ctx, filepath.Join(cluster.RepoRoot(), "test", "harvester", "crds"))).
		To(Succeed(), "installing Harvester's CRDs from test/harvester/crds")
	dyn, err = dynamic.NewForConfig(cl.Config)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(20*time.Minute))

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) {
	if cl == nil {
		return
	}
	if r.SuiteSucceeded {
		_ = os.RemoveAll(filepath.Dir(cl.Dir))
		return
	}
	GinkgoWriter.Printf("suite failed: logs kept in %s\n", cl.Dir)
})
