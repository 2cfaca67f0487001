package integration

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/results"
)

var f *framework.Framework

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet integration")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func() {
	// These specs write VMI and migration statuses themselves, which KubeVirt's own virt-api and
	// virt-controller would revert or fight: KubeVirt stays simulated here. test/kubevirt runs
	// the migration scenarios against KubeVirt's own components.
	f = framework.Start(env.Options{AuditPolicy: env.AuditManagerRequests, SimulatedKubeVirt: true})
})

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
