package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
)

// suiteDir creates the suite's folder, named after its package ("migranet-certs-123"): go test
// runs a suite in its package's directory.
func suiteDir() string {
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "migranet-"+filepath.Base(wd)+"-")
	Expect(err).NotTo(HaveOccurred())
	return dir
}

// start brings up what s asks for in dir and registers its teardown.
func (s Suite) start(ctx context.Context, dir string) *Framework {
	opts := s.Options
	if s.Prepare != nil {
		s.Prepare(ctx, dir, &opts)
	}
	opts.Dir, opts.Progress = filepath.Join(dir, "cluster"), GinkgoWriter
	if s.ControlPlane != nil {
		return s.ControlPlane.start(ctx, opts.Dir)
	}
	if s.RBAC != nil && opts.AuditPolicy == "" {
		opts.AuditPolicy = env.AuditManagerRequests
	}
	e, err := env.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred(), "starting the local environment")
	fmt.Fprintf(GinkgoWriter, "suite environment in %s\n", e.Dir)
	DeferCleanup(e.Stop)
	return &Framework{Env: e}
}

// start runs a bare control plane in dir with what cp adds. Its Framework has the cluster and
// nothing else of an environment: no manager, simulators or node networks.
func (cp *ControlPlane) start(ctx context.Context, dir string) *Framework {
	bins, err := cluster.BuildBinaries(ctx)
	Expect(err).NotTo(HaveOccurred())
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Binaries: bins, Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred(), "starting the control plane")
	DeferCleanup(c.Stop)
	if cp.KubeVirt {
		Expect(cluster.BootstrapKubeVirt(ctx, c.Client)).To(Succeed(), "creating KubeVirt's namespace and CR")
	}
	if len(cp.Nodes) > 0 {
		Expect(cluster.CreateNodes(ctx, c.Client, cp.Nodes)).To(Succeed())
	}
	for _, d := range cp.CRDDirs {
		Expect(c.InstallCRDDir(ctx, filepath.Join(cluster.RepoRoot(), d))).To(Succeed(), "installing the CRDs of %s", d)
	}
	if cp.WithoutMigranetCRDs {
		Expect(c.DeleteCRDsOfGroup(ctx, v1beta1.GroupVersion.Group)).To(Succeed())
	}
	return &Framework{Env: &env.Env{Cluster: c}}
}

// removeLogs deletes the suite's folder after a suite that passed, and names it after one that
// failed (on stdout, which go test shows for a failed package). It runs in ReportAfterSuite,
// after every cleanup: the processes writing there have stopped.
func removeLogs(dir string, r Report) {
	if dir == "" {
		return
	}
	if r.SuiteSucceeded {
		_ = os.RemoveAll(dir)
		return
	}
	fmt.Printf("\nsuite failed: logs kept in %s\n", dir) // after the progress dots
}
