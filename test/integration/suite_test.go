package integration

import (
	"testing"

	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

var f *framework.Framework

// These specs write VMI and migration statuses themselves, which KubeVirt's own virt-api and
// virt-controller would revert or fight: KubeVirt stays simulated here. test/kubevirt runs the
// migration scenarios against KubeVirt's own components.
//
// RBAC: the manager runs as the default overlay's ServiceAccount, bound to the roles
// controller-gen generates from the +kubebuilder:rbac markers. A missing permission (a 403 in the
// audit log) and an excess one (granted, and never used by the whole suite) fail the suite; these
// may stay unused here because their use depends on timing or on a mode this cluster is not in.
func TestIntegration(t *testing.T) {
	framework.RunSuite(t, "migranet integration", &f, framework.Suite{
		Options: env.Options{SimulatedKubeVirt: true},
		RBAC: &framework.RBAC{EveryGrantUsed: true, MayStayUnused: []framework.RBACUse{
			{Resource: "events", Verbs: []string{"patch"},
				Why: "the event recorder patches only an event that repeats within its aggregation window"},
			// Not Harvester: the manager finds no settings.harvesterhci.io resource, sends no request.
			{Group: "harvesterhci.io", Resource: "settings", Verbs: []string{"get", "list", "watch"},
				Why: "used only in Harvester mode (test/harvestermode)"},
			// Nor HCO: the HyperConverged CR exists only under the HyperConverged operator.
			{Namespace: "kubevirt", Group: "hco.kubevirt.io", Resource: "hyperconvergeds", Verbs: []string{"get", "list", "watch", "patch"},
				Why: "used only in HCO mode (test/hcomode)"},
			// hyperconverged.migranet.io reads a NAD its cache lacks from the API server (HCO mode,
			// and only on cache lag: webhook/hyperconverged_test.go's rows).
			{Namespace: "kubevirt", Group: "k8s.cni.cncf.io", Resource: "network-attachment-definitions", Verbs: []string{"get"},
				Why: "used only by the HyperConverged webhook when its cache lags (HCO mode)"},
			// The path-abort controller aborts a streaming migration, driven by KubeVirt's own
			// virt-controller (test/kubevirt/pathabort_test.go, whose audit check covers them).
			{Group: "kubevirt.io", Resource: "virtualmachineinstancemigrations", Verbs: []string{"patch", "delete"},
				Why: "used by the path-abort controller (test/kubevirt)"},
			// The inbound slot reservations are read and written only when a migration is judged
			// with a budget (test/drainbudget, whose audit check covers them).
			{Namespace: "migranet-system", Resource: "configmaps", Verbs: []string{"get", "update"},
				Why: "the inbound slot reservations (test/drainbudget)"},
		}},
	})
}
