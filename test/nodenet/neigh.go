package nodenet

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/migranet/migranet/netcontroller/nodeagent"
)

// The lab's nodes share one kernel, and with it one neighbour table per family (ARP, NDP) for
// all their namespaces, limited by the initial namespace's net.ipv{4,6}.neigh.default.gc_thresh1/2/3
// (defaults 128/512/1024). A real cluster spreads the migration network's neighbour entries over
// its nodes, one table each; the lab holds them all in one:
//
//   - the mesh: every node's virt-handler sandbox probes every other node's from its migration0,
//     so it holds an entry per peer: nodes × (nodes − 1) entries of the network's family (an agent
//     that removes its entries holds fewer; the lab is sized for one that keeps them,
//     --keep-neighbour-entries, and for migrations, which keep theirs);
//   - per node, NeighbourPerNode more: the multicast and link-local entries (MLD, router
//     solicitations) of the node's bridge, uplink, switch port and its pods' veths, and the
//     migrations' targets;
//   - what the table holds already (other labs, the machine's own).
//
// Sized as need = nodes × (nodes − 1) + NeighbourPerNode × nodes + entries now: gc_thresh1 = need
// (the periodic collection leaves the lab's entries alone), gc_thresh2 = 2 × need (no forced
// collection of entries in use), gc_thresh3 = 4 × need (room for a second lab beside). With 40
// nodes and the defaults, the mesh's 1,560 entries overflowed gc_thresh3 = 1,024 and 268 of 780
// pairs read Unreachable.

// NeighbourPerNode is the entries a lab node holds besides its mesh entries.
const NeighbourPerNode = 16

// NeighbourNeed is the entries a lab of nodes nodes needs in each family's table, besides what
// the table holds already.
func NeighbourNeed(nodes int) int {
	return nodes*(nodes-1) + NeighbourPerNode*nodes
}

// NeighbourSizes are the thresholds a lab of nodes nodes asks for when the table holds current
// entries already.
func NeighbourSizes(nodes int, current uint64) nodeagent.NeighbourLimits {
	need := NeighbourNeed(nodes) + int(current)
	return nodeagent.NeighbourLimits{GCThresh1: need, GCThresh2: 2 * need, GCThresh3: 4 * need}
}

// SysctlRoot is where SizeNeighbourTables finds the sysctls; a test points it elsewhere.
var SysctlRoot = "/proc/sys"

// StatRoot is where the initial namespace's neighbour statistics are (/proc/1/net: PID 1 is in
// the initial network namespace, whatever namespace the caller's thread is in).
var StatRoot = "/proc/1/net"

// SizeNeighbourTables raises the IPv4 and IPv6 neighbour thresholds to what a lab of nodes nodes
// needs (NeighbourSizes), each only when it is lower: it never lowers what is set, so another lab
// or the machine's own setting keeps its room. It must run in the initial network namespace
// (the only one with the sysctls), as root. It writes one line to log saying what it set, or that
// the tables were large enough.
func SizeNeighbourTables(nodes int, log io.Writer) error {
	var said []string
	for _, is4 := range []bool{true, false} {
		current := uint64(0)
		if s, err := nodeagent.ReadNeighbourStats(filepath.Join(StatRoot, nodeagent.StatFile(is4))); err == nil {
			current = s.Entries
		}
		have, next, err := RaiseNeighbourLimits(is4, NeighbourSizes(nodes, current))
		if err != nil {
			return err
		}
		name := "net.ipv6.neigh.default"
		if is4 {
			name = "net.ipv4.neigh.default"
		}
		if next == have {
			said = append(said, fmt.Sprintf("%s.gc_thresh1/2/3 %d/%d/%d kept", name, have.GCThresh1, have.GCThresh2, have.GCThresh3))
		} else {
			said = append(said, fmt.Sprintf("%s.gc_thresh1/2/3 %d/%d/%d raised to %d/%d/%d", name,
				have.GCThresh1, have.GCThresh2, have.GCThresh3, next.GCThresh1, next.GCThresh2, next.GCThresh3))
		}
	}
	if log != nil {
		fmt.Fprintf(log, "nodenet: neighbour tables (one per kernel, every node's namespaces together) sized for %d nodes, %d entries each (%d×%d mesh + %d per node, plus what they hold): %s; %s\n",
			nodes, NeighbourNeed(nodes), nodes, nodes-1, NeighbourPerNode, said[0], said[1])
	}
	return nil
}

// RaiseNeighbourLimits raises a family's thresholds under SysctlRoot to want, each only where it
// is lower, and returns them before and after.
func RaiseNeighbourLimits(is4 bool, want nodeagent.NeighbourLimits) (have, next nodeagent.NeighbourLimits, err error) {
	dir := filepath.Join(SysctlRoot, nodeagent.SysctlDir(is4))
	have, err = nodeagent.ReadNeighbourLimits(dir)
	if err != nil {
		return have, have, fmt.Errorf("reading the neighbour table limits (they exist in the initial network namespace only): %w", err)
	}
	next = nodeagent.NeighbourLimits{GCThresh1: max(have.GCThresh1, want.GCThresh1), GCThresh2: max(have.GCThresh2, want.GCThresh2),
		GCThresh3: max(have.GCThresh3, want.GCThresh3)}
	return have, next, WriteNeighbourLimits(is4, have, next)
}

// WriteNeighbourLimits writes the thresholds of next that differ from have, gc_thresh3 first.
func WriteNeighbourLimits(is4 bool, have, next nodeagent.NeighbourLimits) error {
	dir := filepath.Join(SysctlRoot, nodeagent.SysctlDir(is4))
	for _, s := range []struct{ n, from, v int }{{3, have.GCThresh3, next.GCThresh3}, {2, have.GCThresh2, next.GCThresh2}, {1, have.GCThresh1, next.GCThresh1}} {
		if s.v == s.from {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "gc_thresh"+strconv.Itoa(s.n)), []byte(strconv.Itoa(s.v)), 0o644); err != nil {
			return fmt.Errorf("setting %s/gc_thresh%d to %d: %w", dir, s.n, s.v, err)
		}
	}
	return nil
}

// NeighbourOverflows is the kernel's count of refused neighbour entries (both families, since
// boot): an increase means some namespace's packet went unresolved for want of room.
func NeighbourOverflows() (uint64, error) {
	var n uint64
	for _, is4 := range []bool{true, false} {
		s, err := nodeagent.ReadNeighbourStats(filepath.Join(StatRoot, nodeagent.StatFile(is4)))
		if err != nil {
			return 0, err
		}
		n += s.TableFulls
	}
	return n, nil
}
