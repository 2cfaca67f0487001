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

// InferNetwork fills the network of in-flight rows KubeVirt gave none (KubeVirt v1.9.0's
// virt-handler leaves migrationState.migrationNetworkType empty) from the address the target
// listens on: virt-handler advertises its migration0 address when it has one, else its pod
// address. An address inside the range of the migration network in force means Migration; with
// the pod network in force, or an address outside that range, Pod. Rows without a target address,
// finished rows and rows while the network's state is unknown stay as they are.
func InferNetwork(rows []Row, net Network) {
	var rng netip.Prefix
	switch net.Mode {
	case ModePod:
	case ModeMigration:
		p, err := netip.ParsePrefix(net.Range)
		if err != nil {
			return
		}
		rng = p
	default:
		return
	}
	for i := range rows {
		r := &rows[i]
		if r.Network != "" || !r.InFlight || r.TargetAddress == "" {
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
