package env

import (
	"fmt"
	"strconv"
)

// ScaleRigAbove is the number of nodes above which the lab's probe agents run as a scale rig
// (ProbeArgsFor).
const ScaleRigAbove = 25

// ProbeArgsFor are the probe agents' arguments in a lab of nodes nodes (what Options.ProbeArgs
// defaults to), and a line saying why when they are not DefaultProbeArgs.
//
// Every agent probes every other agent every round, so the lab's probes grow with the square of
// its nodes, on one machine. Up to ScaleRigAbove nodes the agents round every 4 s
// (DefaultProbeArgs). Above, the interval grows with the nodes, one second per five nodes (20 s,
// the DaemonSet's own default, at 100): the lab then sends about ten probes a second per node
// whatever its size, so each node costs what it costs at 25. And the agents keep their neighbour
// entries (--keep-neighbour-entries): all the lab's nodes share one kernel and its one neighbour
// table, which the lab sizes for the whole mesh (nodenet.SizeNeighbourTables), and the removal's
// sweep dumps that shared table 20 times a second in every agent, a cost that grows with the
// square of the nodes here (a real node's table holds only its own entries). Measured on 2 cores
// at 100 nodes: the agents took 2.7 cores with 4 s rounds and removal (the sweeps 18 % of it,
// the probes' sends most of the rest) and never verified every pair; 0.53 with 20 s rounds and the
// entries kept, every pair verified (make scale).
func ProbeArgsFor(nodes int) (args []string, why string) {
	if nodes <= ScaleRigAbove {
		return DefaultProbeArgs, ""
	}
	interval := (nodes + 4) / 5
	args = []string{"--interval=" + strconv.Itoa(interval) + "s", "--timeout=600ms", "--tries=3", "--keep-neighbour-entries"}
	return args, fmt.Sprintf("%d nodes, above %d: the probe agents run as a scale rig, a round every %d s (one second per five nodes) and their neighbour entries kept (the lab's one shared table is sized for the whole mesh)",
		nodes, ScaleRigAbove, interval)
}
