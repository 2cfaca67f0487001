package kubevirt

import (
	"testing"

	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

// KubeVirt's own components run by default. RBAC refused no request of migranet's (the audit check
// of test/integration, for the paths KubeVirt's own controllers drive; no spec here removes a
// permission), and the path-abort controller, whose specs run here (pathabort_test.go), used the
// permissions test/integration leaves to this suite.
func TestKubeVirt(t *testing.T) {
	framework.RunSuite(t, "migranet with KubeVirt's virt-api and virt-controller", &f, framework.Suite{
		RBAC: &framework.RBAC{Used: []framework.RBACUse{{Group: "kubevirt.io", Resource: "virtualmachineinstancemigrations",
			Verbs: []string{"patch", "delete"}, Why: "the path-abort controller"}}},
	})
}
