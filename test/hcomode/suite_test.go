package hcomode

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/results"
)

var f *framework.Framework

func TestHCOMode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet in HCO mode")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func() {
	f = framework.Start(env.Options{HCO: true, AuditPolicy: env.AuditManagerRequests})
})

// RBAC refused none of migranet's requests, and the HyperConverged rules only HCO mode uses were
// used.
var _ = AfterSuite(func() {
	if f == nil {
		return
	}
	events := f.ExpectNeverForbidden(env.ManagerUser, nil)
	for _, verb := range []string{"get", "list", "watch", "patch"} {
		Expect(events).To(ContainElement(And(HaveField("Verb", verb),
			HaveField("ObjectRef", HaveValue(And(HaveField("APIGroup", "hco.kubevirt.io"), HaveField("Resource", "hyperconvergeds")))))),
			"migranet never used %s on hyperconvergeds.hco.kubevirt.io: remove the RBAC marker, or find why HCO mode did not", verb)
	}
})

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
