package env

import (
	"context"
	"fmt"
	"path/filepath"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// HCOCRDs is the folder of HCO's HyperConverged CRD as the proving ground serves it.
func HCOCRDs() string { return filepath.Join(cluster.RepoRoot(), "test", "hco", "crds") }

// hcoInstall makes the cluster look like an HCO install to migranet, in place of the usual
// bootstrap of the KubeVirt CR: HCO's CRD, the HyperConverged CR, and the KubeVirt CR HCO creates
// for it (kubevirt-kubevirt-hyperconverged, controlled by the HyperConverged CR). HCO's namespace
// is kubevirt-hyperconverged upstream and openshift-cnv on OpenShift; here it is the local
// cluster's KubeVirt namespace: migranet takes the namespace from --kubevirt-namespace and the
// owner from the KubeVirt CR, never from a name. base is the spec the KubeVirt CR was created
// with: the stand-in of HCO's KubeVirt handler derives from it.
type hcoInstall struct {
	base     kubevirtv1.KubeVirtSpec
	captured bool
}

// bootstrap installs it; it may run twice (before KubeVirt's components and again in env.Start)
// and keeps what exists.
func (h *hcoInstall) bootstrap(ctx context.Context, c *cluster.Cluster) error {
	if err := c.InstallCRDDir(ctx, HCOCRDs()); err != nil {
		return fmt.Errorf("installing HCO's CRD: %w", err)
	}
	hc := sim.NewHyperConverged(cluster.KubeVirtNamespace)
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(hc), hc); err != nil {
		if err := c.Client.Create(ctx, hc); err != nil {
			return fmt.Errorf("creating the HyperConverged CR: %w", err)
		}
	}
	owner := sim.HyperConvergedOwnerRef(hc)
	if err := cluster.BootstrapKubeVirtAs(ctx, c.Client, sim.HCOKubeVirtName, &owner); err != nil {
		return err
	}
	kv := &kubevirtv1.KubeVirt{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: sim.HCOKubeVirtName}, kv); err != nil {
		return err
	}
	if !h.captured {
		h.base, h.captured = *kv.Spec.DeepCopy(), true
		h.base.Configuration.MigrationConfiguration = nil
	}
	// HCO creates the CR with the spec it derives: no difference for its first reconcile.
	want, err := sim.DeriveKubeVirtSpec(h.base, hc)
	if err != nil {
		return err
	}
	kv.Spec = want
	return c.Client.Update(ctx, kv)
}
