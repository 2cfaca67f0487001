package hcomode

import (
	"testing"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

// RBAC refused none of migranet's requests, and the HyperConverged rules only HCO mode uses
// (which test/integration's unused-permission check leaves to this suite) were used.
func TestHCOMode(t *testing.T) {
	framework.RunSuite(t, "migranet in HCO mode", &f, framework.Suite{
		Options: env.Options{HCO: true},
		RBAC: &framework.RBAC{Used: []framework.RBACUse{{Group: "hco.kubevirt.io", Resource: "hyperconvergeds",
			Verbs: []string{"get", "list", "watch", "patch"}, Why: "HCO mode only"}}},
	})
}
