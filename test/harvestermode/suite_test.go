package harvestermode

import (
	"testing"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

// RBAC refused none of migranet's requests, and the rules only Harvester mode uses (which
// test/integration's unused-permission check leaves to this suite) were used.
func TestHarvesterMode(t *testing.T) {
	framework.RunSuite(t, "migranet in Harvester mode", &f, framework.Suite{
		Options: env.Options{Harvester: true, Nodes: append(cluster.DefaultNodes(3), cluster.NodeSpec{Name: "witness-1", Witness: true})},
		RBAC: &framework.RBAC{Used: []framework.RBACUse{{Group: "harvesterhci.io", Resource: "settings",
			Verbs: []string{"get", "list", "watch"}, Why: "Harvester mode only"}}},
	})
}
