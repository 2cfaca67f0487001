package env

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// network controller's NAD mutator) with the other simulators, acting as Harvester's service
// account (AsHarvester) and reading from the manager's cache.
func addHarvesterSimulator(ctx context.Context, c *cluster.Cluster, mgr ctrl.Manager) error {
	as, err := AsHarvester(ctx, c.Client, mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	if err != nil {
		return err
	}
	return (&sim.HarvesterMigrationNetwork{Client: as, Namespace: cluster.KubeVirtNamespace, KubeVirtName: cluster.KubeVirtName}).SetupWithManager(mgr)
}

// AsHarvester is a client that acts as Harvester's service account (sim.HarvesterServiceAccount,
// impersonated from cfg, bound to cluster-admin by admin here: the real controller's rights are
// wider than what the stand-in does), so migranet's policies judge its requests as they judge
// Harvester's.
func AsHarvester(ctx context.Context, admin client.Client, cfg *rest.Config, opts client.Options) (client.Client, error) {
	ns, name, _ := strings.Cut(strings.TrimPrefix(sim.HarvesterServiceAccount, "system:serviceaccount:"), ":")
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sim-harvester"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	if err := admin.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("binding %s: %w", sim.HarvesterServiceAccount, err)
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: sim.HarvesterServiceAccount}
	c, err := client.New(as, opts)
	if err != nil {
		return nil, fmt.Errorf("a client acting as %s: %w", sim.HarvesterServiceAccount, err)
	}
	return c, nil
}
