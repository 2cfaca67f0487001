package harvestermode

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/results"
)

var f *framework.Framework

func TestHarvesterMode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet in Harvester mode")
}

// The spec counts for the summary table of `make test`.
var _ = ReportAfterSuite("save the spec report", results.SaveGinkgo)

var _ = BeforeSuite(func() {
	nodes := append(cluster.DefaultNodes(3), cluster.NodeSpec{Name: "witness-1", Witness: true})
	f = framework.Start(env.Options{Harvester: true, Nodes: nodes, AuditPolicy: env.AuditManagerRequests})
})

// RBAC refused none of migranet's requests, and the rules only Harvester mode uses (which
// test/integration's unused-permission check leaves to this suite) were used.
var _ = AfterSuite(func() {
	if f == nil {
		return
	}
	events := f.ExpectNeverForbidden(env.ManagerUser, nil)
	for _, verb := range []string{"get", "list", "watch"} {
		Expect(events).To(ContainElement(And(HaveField("Verb", verb),
			HaveField("ObjectRef", HaveValue(And(HaveField("APIGroup", "harvesterhci.io"), HaveField("Resource", "settings")))))),
			"migranet never used %s on settings.harvesterhci.io: remove the RBAC marker, or find why Harvester mode did not read it", verb)
	}
})

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
