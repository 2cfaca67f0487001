package status

import (
	"net/netip"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Where a row's network comes from (Row.NetworkSource).
const (
	// NetworkReported: KubeVirt reported it in migrationState.migrationNetworkType.
	NetworkReported = "reported"
	// NetworkFromAddress: judged from the target's migration address against the current
	// migration network (see InferNetwork).
	NetworkFromAddress = "address"
)

// InferNetwork fills the network of rows KubeVirt gave none (KubeVirt v1.9.0's virt-handler
// leaves migrationState.migrationNetworkType empty) from the address the target listens on:
// virt-handler advertises its migration0 address when it has one, else its pod address. An
// address inside the range of the migration network in force means Migration; with the pod
// network in force, or an address outside that range, Pod. A finished row is judged only when
// KubeVirt configured it with the network in force (state.migrationConfiguration.network is its
// NAD, or empty with the pod network in force): the range of an earlier network is not known.
// Rows without a target address and rows while the network's state is unknown stay as they are.
func InferNetwork(rows []Row, net Network) {
	var rng netip.Prefix
	switch net.Mode {
	case ModePod:
	case ModeMigration:
		if rng = net.rangePrefix; !rng.IsValid() {
			return
		}
	default:
		return
	}
	for i := range rows {
		r := &rows[i]
		if r.Network != "" || r.TargetAddress == "" || !r.InFlight && !ranWith(r, net) {
			continue
		}
		addr, err := netip.ParseAddr(r.TargetAddress)
		if err != nil {
			continue
		}
		r.Network, r.NetworkSource = string(kubevirtv1.Pod), NetworkFromAddress
		if rng.IsValid() && rng.Contains(addr.Unmap()) {
			r.Network = string(kubevirtv1.Migration)
		}
	}
}

// ranWith reports whether finished row r was configured with the network net says is in force.
func ranWith(r *Row, net Network) bool {
	if !r.configKnown {
		return false
	}
	if net.Mode == ModePod {
		return r.ConfiguredNAD == ""
	}
	return r.ConfiguredNAD != "" && r.ConfiguredNAD == net.NAD
}
