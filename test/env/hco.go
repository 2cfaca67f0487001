package env

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// HCOCRDs is the folder of HCO's HyperConverged CRD as the proving ground serves it.
func HCOCRDs() string { return filepath.Join(cluster.RepoRoot(), "test", "hco", "crds") }

// startHCO makes the cluster look like an HCO install to migranet before the manager starts:
// HCO's CRD, the HyperConverged CR, and the KubeVirt CR HCO creates for it
// (kubevirt-kubevirt-hyperconverged, controlled by the HyperConverged CR). HCO's namespace is
// kubevirt-hyperconverged upstream and openshift-cnv on OpenShift; here it is the local cluster's
// KubeVirt namespace: migranet takes the namespace from --kubevirt-namespace and the owner from the
// KubeVirt CR, never from a name. The stand-in of HCO's KubeVirt handler starts with the other
// simulators, its Base the spec the CR was created with.
func (e *Env) startHCO(ctx context.Context) error {
	if err := e.InstallCRDDir(ctx, HCOCRDs()); err != nil {
		return fmt.Errorf("installing HCO's CRD: %w", err)
	}
	hc := sim.NewHyperConverged(cluster.KubeVirtNamespace)
	if err := e.Client.Create(ctx, hc); err != nil {
		return fmt.Errorf("creating the HyperConverged CR: %w", err)
	}
	owner := sim.HyperConvergedOwnerRef(hc)
	if err := cluster.BootstrapKubeVirtAs(ctx, e.Client, sim.HCOKubeVirtName, &owner); err != nil {
		return err
	}
	e.kubeVirtName = sim.HCOKubeVirtName
	kv, err := e.KubeVirt(ctx)
	if err != nil {
		return err
	}
	e.HCO = &sim.HCOKubeVirtHandler{Client: e.Client, Namespace: cluster.KubeVirtNamespace, Base: *kv.Spec.DeepCopy()}
	return nil
}
