package certs

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

var cl *cluster.Cluster

func TestCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet webhook certificates")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func() {
	dir, err := os.MkdirTemp("", "migranet-certs-")
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cl, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred(), "starting the control plane")
	DeferCleanup(cl.Stop)
})

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
