package kubevirt

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

func TestKubeVirt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "migranet with KubeVirt's virt-api and virt-controller")
}

var _ = BeforeSuite(func() {
	f = framework.Start(env.Options{}) // KubeVirt's own components run by default
})

var _ = ReportAfterSuite("remove logs of a passing suite", func(r Report) { f.RemoveLogs(r) })
