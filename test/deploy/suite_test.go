package deploy

import (
	"testing"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// f is a fresh control plane with KubeVirt's namespace (migranet extends an existing KubeVirt:
// its namespace is there before the install) and two nodes.
var f *framework.Framework

func TestDeploy(t *testing.T) {
	framework.RunSuite(t, "migranet deploy", &f, framework.Suite{
		ControlPlane: &framework.ControlPlane{KubeVirt: true, Nodes: cluster.DefaultNodes(2)},
		Timeout:      10 * time.Minute,
	})
}
