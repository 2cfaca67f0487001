package migrationcheck

import (
	"fmt"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// sourceOffNetwork explains why the VMI's node cannot send a migration over the migration network
// in force, or returns "": the node does not carry the value's cluster network. Its virt-handler
// still has a migration0 address (the bridge CNI plugin creates a missing bridge, without uplink;
// the network controller reports the node NoClusterNetwork), but the stream cannot leave the
// node. Judged only when the
// network controller's snapshot describes the current value (else networkNotReady speaks) and the
// VMI's node is in the cache.
func sourceOffNetwork(in *CreateInput) string {
	if in.VMI == nil || in.VMI.Status.NodeName == "" || in.CurrentHash == "" || in.Network == nil ||
		in.Network.Hash != in.CurrentHash || in.Network.ClusterNetwork == "" {
		return ""
	}
	source, cn := in.VMI.Status.NodeName, in.Network.ClusterNetwork
	if n := in.node(source); n != nil {
		if settings.HasClusterNetwork(n, cn) {
			return ""
		}
		return fmt.Sprintf("VirtualMachineInstance %s/%s runs on %s, which does not carry the cluster network %s (label %s%s=true): "+
			"the setting's network is selected by that label, so the node is outside it (a bridge network's migration0 there sits on a bridge with no uplink), "+
			"and the migration cannot leave the node over it; "+
			"attach %s to the cluster network %s, or clear the setting %s to migrate over the pod network",
			in.VMI.Namespace, in.VMI.Name, source, cn, settings.ClusterNetworkLabelPrefix, cn, source, cn, v1beta1.MigrationNetwork)
	}
	return ""
}

// sourceNotAttached explains why the VMI's node cannot send a migration over the current
// migration network — its virt-handler is not attached (the snapshot's NotAttached) — or returns
// "". Judged only once the current value is applied and observed (networkNotReady speaks before).
func sourceNotAttached(in *CreateInput) string {
	snap := in.Network
	if in.VMI == nil || in.VMI.Status.NodeName == "" || snap == nil || in.CurrentHash == "" || snap.Hash != in.CurrentHash {
		return ""
	}
	source := in.VMI.Status.NodeName
	why, ok := snap.NotAttached[source]
	if !ok {
		return ""
	}
	return fmt.Sprintf("VirtualMachineInstance %s/%s runs on %s, whose virt-handler is not on the migration network %s (%s; %d of %d virt-handlers are on the migration network %s), "+
		"so the migration cannot leave %s over it; retry when the setting %s lists %s with an address (kubectl get setting %s -o jsonpath='{.status.nodes}')",
		in.VMI.Namespace, in.VMI.Name, source, snap.Network, why, snap.Attached, snap.Eligible, snap.Network, source, v1beta1.MigrationNetwork, source, v1beta1.MigrationNetwork)
}
