package sim

import "fmt"

// Side is one end of a migration as the network sees it: the node's virt-handler and what the
// node's kernel gives its migration interface.
type Side struct {
	Node string
	// Migration0 is the virt-handler's migration0 link; nil when its pod has none, and then the
	// virt-handler uses its pod IP (KubeVirt v1.8.4 FindMigrationIP, pkg/virt-handler/migration.go,
	// falls back to the pod IP when net.InterfaceByName("migration0") fails).
	Migration0 *Link
	// Uplink is the node's uplink for Migration0's bridge.
	Uplink Uplink
}

// PathVerdict is what the stand-in's migration does over the path between two sides.
type PathVerdict struct {
	// Broken: the source cannot reach the target's advertised address at all; the migration fails
	// as soon as it starts (libvirt's MigrateToURI3 returns the proxy's closed connection).
	Broken bool
	// Stalls: the connection opens (small packets pass) but full-size frames are dropped on the
	// way, so the migration makes no progress and is aborted (KubeVirt's progress timeout,
	// live-migration-source.go: "Live migration stuck for %d seconds and has been aborted").
	Stalls bool
	// Why, for a broken or stalling path.
	Why string
	// Network is the network the stream crosses: "Migration" or "Pod" (migrationNetworkType).
	Network string
}

// OK reports a path that carries the migration.
func (v PathVerdict) OK() bool { return !v.Broken && !v.Stalls }

// MigrationPath judges the path from src to dst the way the kernel and the fabric would, for a
// target that advertises its migration0 address (or its pod IP without one). It is a model, used
// only where no bytes can move (simulated node networks, the pod network, simulated VLAN tags:
// see Streamable); between two real migration0 links the stand-in streams the migration instead
// (Stream) and what crosses decides:
//
//   - target without migration0: it advertises its pod IP, the source dials it through the pod
//     network, and the migration works (over the pod network, not the dedicated one);
//   - source without migration0: the target's migration0 address is routed through the source's
//     pod network, which cannot reach it;
//   - different bridges or VLANs (nodes on different NADs during a roll): different L2 segments;
//   - the target's address outside the source's migration0 subnet: routed through the pod network;
//   - a node that does not carry the cluster network: the bridge the plugin created there has no
//     uplink (see ParseBridgeConf);
//   - MTU: TCP's MSS follows the smaller of the two interfaces' MTUs, so two interfaces with
//     different MTUs talk fine; but if that MTU exceeds either node's uplink MTU, full-size frames
//     are dropped on the uplink (an L2 path sends no "fragmentation needed"): the stream stalls.
func MigrationPath(src, dst Side) PathVerdict {
	if dst.Migration0 == nil {
		return PathVerdict{Network: "Pod"}
	}
	s, d := src.Migration0, dst.Migration0
	broken := func(format string, a ...any) PathVerdict {
		return PathVerdict{Broken: true, Network: "Migration", Why: fmt.Sprintf(format, a...)}
	}
	switch {
	case s == nil:
		return broken("no route to host %s: the source node %s's virt-handler has no migration0, so the target's migration address goes to the pod network", d.Addr, src.Node)
	case s.Bridge != d.Bridge || s.VLAN != d.VLAN || s.Master != d.Master:
		return broken("no route to host %s: the source node %s's migration0 is on bridge %s VLAN %d (%s), the target node %s's on bridge %s VLAN %d (%s)",
			d.Addr, src.Node, s.Bridge, s.VLAN, s.NAD, dst.Node, d.Bridge, d.VLAN, d.NAD)
	case !s.Prefix.Contains(d.Addr):
		return broken("no route to host %s: outside the source node %s's migration0 subnet %s", d.Addr, src.Node, s.Prefix)
	case !src.Uplink.Carried:
		return broken("no route to host %s: the source node %s does not carry cluster network %s, so its bridge %s has no uplink", d.Addr, src.Node, ClusterNetworkOf(s.Bridge), s.Bridge)
	case !dst.Uplink.Carried:
		return broken("no route to host %s: the target node %s does not carry cluster network %s, so its bridge %s has no uplink", d.Addr, dst.Node, ClusterNetworkOf(d.Bridge), d.Bridge)
	}
	mtu := min(s.EffectiveMTU(), d.EffectiveMTU())
	if up := min(src.Uplink.MTU, dst.Uplink.MTU); mtu > up {
		return PathVerdict{Stalls: true, Network: "Migration", Why: fmt.Sprintf(
			"frames of %d bytes (migration0 MTU) are dropped on an uplink of MTU %d (source node %s %d, target node %s %d)",
			mtu, up, src.Node, src.Uplink.MTU, dst.Node, dst.Uplink.MTU)}
	}
	return PathVerdict{Network: "Migration"}
}
