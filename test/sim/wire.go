package sim

import (
	"context"
	"fmt"

	"github.com/migranet/migranet/test/nodenet"
)

// WirePath judges the path from src to dst by sending packets over it, for two links the real
// plugins made (Link.Sandbox set on both): from the source's sandbox, a small Don't-Fragment
// echo to the target's migration0 address (no reply: the migration cannot connect, it fails at
// once), then one filling the smaller of the two interfaces' MTUs (no reply: the connection opens
// but full-size segments never arrive, the migration stalls). Only what the kernel cannot do here
// is decided as MigrationPath decides it: a target without migration0 (the pod network, not
// modelled by packets), a source without one, and links whose VLAN tag is simulated
// (Link.TagSimulated) with different tags.
func WirePath(ctx context.Context, src, dst Side) PathVerdict {
	s, d := src.Migration0, dst.Migration0
	if d == nil || s == nil || s.Sandbox == "" || d.Sandbox == "" || (s.VLAN != d.VLAN && (s.TagSimulated || d.TagSimulated)) {
		return MigrationPath(src, dst)
	}
	if err := nodenet.Ping(ctx, s.Sandbox, d.Addr, 56); err != nil {
		return PathVerdict{Broken: true, Network: "Migration", Why: fmt.Sprintf(
			"no route to host %s: a probe from the source node %s's migration0 (%s) got no reply", d.Addr, src.Node, s.Addr)}
	}
	mtu := min(s.EffectiveMTU(), d.EffectiveMTU())
	if err := nodenet.Ping(ctx, s.Sandbox, d.Addr, nodenet.FullPayload(d.Addr, mtu)); err != nil {
		return PathVerdict{Stalls: true, Network: "Migration", Why: fmt.Sprintf(
			"%d-byte frames (migration0 MTU) from the source node %s to %s do not arrive: a full-size Don't-Fragment probe got no reply", mtu, src.Node, d.Addr)}
	}
	return PathVerdict{Network: "Migration"}
}
