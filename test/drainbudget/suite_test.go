package drainbudget

import (
	"testing"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

// RBAC refused none of migranet's requests, and the inbound slot reservations (which
// test/integration's unused-permission check leaves to this suite) were read and written.
func TestDrainBudget(t *testing.T) {
	framework.RunSuite(t, "a drain under a per-node migration budget", &f, framework.Suite{
		Options: env.Options{Nodes: cluster.DefaultNodes(5)},
		RBAC: &framework.RBAC{Used: []framework.RBACUse{{Namespace: "migranet-system", Resource: "configmaps",
			Verbs: []string{"get", "update"}, Why: "the inbound slot reservations"}}},
	})
}
