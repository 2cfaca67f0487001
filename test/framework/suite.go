package framework

import (
	"cmp"
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/results"
)

// Suite says how RunSuite starts a Ginkgo suite and what it checks at the suite's end.
type Suite struct {
	// Options start the whole environment (env.Start): control plane, KubeVirt, simulators and
	// migranet from manifests/. Dir and Progress are the starter's; with RBAC set and no
	// AuditPolicy, the API server logs migranet's requests (env.AuditManagerRequests).
	Options env.Options
	// ControlPlane, when set, starts a bare control plane instead (cluster.Start), for suites
	// that install migranet themselves or need none of it; Options are not used then.
	ControlPlane *ControlPlane
	// Prepare runs first in BeforeSuite with the suite's folder (kept when the suite fails), for
	// work the start depends on: the rolling upgrade builds the releases it installs into opts.
	Prepare func(ctx context.Context, dir string, opts *env.Options)
	// Started runs in BeforeSuite once everything is up.
	Started func(ctx context.Context, f *Framework)
	// RBAC is checked against the audit log when the specs are done; nil checks nothing.
	RBAC *RBAC
	// Timeout bounds BeforeSuite; DefaultStartTimeout when 0.
	Timeout time.Duration
}

// PollInterval is how often Eventually and Consistently try again unless a spec says otherwise
// (Gomega's default is 10 ms). Most tries read the API server, and a read of a custom resource
// costs it a consistent read from etcd and a decode against the CRD's schema: at 10 ms the specs'
// own polling was about half of the API server's requests, and a focused run of four integration
// Describe blocks cost 276 s of CPU at 10 ms against 208 s at 100 ms, in the same wall time.
// Every object a spec waits on changes in steps seconds apart, so a state that holds 100 ms is
// still seen; a spec that needs finer polling asks for it (WithPolling).
const PollInterval = 100 * time.Millisecond

// DefaultStartTimeout bounds a suite's start: a cold tool build (test/tools/build.sh) included.
const DefaultStartTimeout = 20 * time.Minute

// ControlPlane is what a bare control plane gets besides the CRDs cluster.Start installs.
type ControlPlane struct {
	// KubeVirt creates KubeVirt's namespace and CR as an install leaves them
	// (cluster.BootstrapKubeVirt): migranet extends an existing KubeVirt.
	KubeVirt bool
	// Nodes are created as kwok nodes.
	Nodes []cluster.NodeSpec
	// CRDDirs are folders of CRD fixtures to install, relative to the repository root.
	CRDDirs []string
	// WithoutMigranetCRDs deletes the migranet.io CRDs the control plane starts with: the
	// release under test installs its own, as on a cluster it was installed on.
	WithoutMigranetCRDs bool
}

// RunSuite runs the package's Ginkgo specs as one suite. Call it from the package's one Test
// function, with the package's Framework variable (set in BeforeSuite, before any spec runs). It
// registers Gomega's fail handler and the suite nodes: BeforeSuite starts the environment (or the
// bare control plane) in a folder of its own and registers its teardown; AfterSuite checks RBAC
// (when s.RBAC is set); ReportAfterSuite saves the spec report for `make test`'s summary table
// (results.SaveGinkgo), then removes the folder of a passing suite and names the one a failing
// suite keeps. A suite using it has no BeforeSuite or AfterSuite of its own (Ginkgo refuses a
// second): s.Prepare and s.Started are the places for suite-wide work.
func RunSuite(t *testing.T, description string, f **Framework, s Suite) {
	t.Helper()
	RegisterFailHandler(Fail)
	SetDefaultEventuallyPollingInterval(PollInterval)
	SetDefaultConsistentlyPollingInterval(PollInterval)
	var dir string // the suite's folder: logs, data, builds
	BeforeSuite(func(ctx SpecContext) {
		dir = suiteDir()
		*f = s.start(ctx, dir)
		if s.Started != nil {
			s.Started(ctx, *f)
		}
	}, NodeTimeout(cmp.Or(s.Timeout, DefaultStartTimeout)))
	if s.RBAC != nil {
		AfterSuite(func() {
			if *f != nil { // nil: the start failed, and said why
				s.RBAC.check(*f)
			}
		})
	}
	ReportAfterSuite("save the spec report", results.SaveGinkgo)
	ReportAfterSuite("remove the logs of a passing suite", func(r Report) { removeLogs(dir, r) })
	RunSpecs(t, description)
}
