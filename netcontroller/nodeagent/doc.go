// Package nodeagent is the per-node probe agent (`migranet probe`, a DaemonSet beside virt-handler): it proves
// that every pair of nodes can carry a migration stream over the migration network, and writes
// what it finds in its node's PathReport.
//
// It owns no address of its own. It finds the network namespace of its node's virt-handler pod
// (a process of the pod, by the pod's UID in /proc/<pid>/cgroup: the agent runs with hostPID),
// opens its UDP socket on that pod's migration0 address, and probes from there every peer's
// migration0: the path migrations take. An agent that cannot find the pod, its namespace or its
// interface reports that (PathReport.Problem); it never probes from elsewhere.
//
// Per peer and round: a small probe (reachability, round-trip time), then one that fills the
// network's MTU with Don't-Fragment set; when that one is lost, a volley of sizes finds the
// largest frame that crosses. A peer whose probes are not answered while its own probes arrive is
// OneWay. Every packet carries the network's identity (wire.go): foreign packets on the port are
// ignored. Rounds spread the probes evenly over the interval, at most MaxRate a second.
//
// The probes make neighbour (ARP/NDP) entries in the node's one table, shared by every pod
// (neighbours.go): the agent reads the node's limits and counters from the initial network
// namespace, keeps its entries within a share of the table (removing the least recently used
// beyond it, never one a migration's stream confirms), reports the table in the PathReport
// (neighbourTable, with what to raise when the limits cannot hold the network) and, when the
// table overflowed during a round in which peers failed, reports NeighbourTableFull instead of
// those failures.
//
// It also enforces the node's migration budget (the migration policy's "budget", settings.Budget)
// where every migration byte of the node passes: virt-handler's migration0. From the same
// namespace it shapes what leaves migration0 with HTB and what arrives through an IFB carrying the
// same HTB tree (shaper.go), live, with no virt-handler restart; the probes keep a class of their
// own. It measures what crosses migration0 and reports it with the budget in the PathReport
// (migration) and its metrics (shaping.go).
package nodeagent
