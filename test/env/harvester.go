package env

import (
	"context"
	"fmt"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// HarvesterCRDs is the folder of Harvester's CRDs (make harvester-crds): no other environment
// installs them, so migranet's --harvester=auto finds Harvester only where Options.Harvester asks.
func HarvesterCRDs() string { return filepath.Join(cluster.RepoRoot(), "test", "harvester", "crds") }

// startHarvester makes the cluster look like Harvester to migranet before the manager starts:
// Harvester's CRDs, the ClusterNetwork of the nodes' cluster network with its uplink MTU (which
// Harvester's network controller copies from the VlanConfig) and Harvester's empty
// vm-migration-network setting, as Harvester registers it.
func startHarvester(ctx context.Context, c *cluster.Cluster) error {
	if err := c.InstallCRDDir(ctx, HarvesterCRDs()); err != nil {
		return fmt.Errorf("installing Harvester's CRDs: %w", err)
	}
	if err := sim.EnsureClusterNetwork(ctx, c.Client, cluster.DefaultClusterNetwork, cluster.DefaultUplinkMTU); err != nil {
		return err
	}
	return sim.EnsureHarvesterSetting(ctx, c.Client)
}

// addHarvesterSimulator runs the stand-in of Harvester's vm-migration-network controller (and its
// network controller's NAD mutator) with the other simulators.
func addHarvesterSimulator(mgr ctrl.Manager) error {
	return (&sim.HarvesterMigrationNetwork{Client: mgr.GetClient(), Namespace: cluster.KubeVirtNamespace, KubeVirtName: cluster.KubeVirtName}).SetupWithManager(mgr)
}
