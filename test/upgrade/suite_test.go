package upgrade

import (
	"testing"
	"time"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// f is a bare control plane as the previous release was installed on: KubeVirt's namespace there
// (migranet extends an existing KubeVirt), two nodes, and none of the current tree's migranet
// CRDs (test/cluster.InstallCRDs installs them): the previous release brings its own.
var f *framework.Framework

func TestUpgrade(t *testing.T) {
	framework.RunSuite(t, "migranet upgrade", &f, framework.Suite{
		ControlPlane: &framework.ControlPlane{KubeVirt: true, Nodes: cluster.DefaultNodes(2), WithoutMigranetCRDs: true},
		Timeout:      10 * time.Minute,
	})
}
