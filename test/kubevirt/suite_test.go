package kubevirt

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/results"
)

var f *framework.Framework

func TestKubeVirt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet with KubeVirt's virt-api and virt-controller")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func() {
	// KubeVirt's own components run by default. The audit log records migranet's requests: here
	// KubeVirt's controllers drive paths the other suite never takes.
	f = framework.Start(env.Options{AuditPolicy: env.AuditManagerRequests})
})

// RBAC refused no request of migranet's (the suite-end check of test/integration, for the paths
// KubeVirt's own components drive). No spec here removes a permission.
var _ = AfterSuite(func() {
	if f != nil {
		f.ExpectNeverForbidden(env.ManagerUser, nil)
	}
})

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
