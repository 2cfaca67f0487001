// Package netcontroller reports the migration network as it is on the nodes. From virt-handler pods
// (their k8s.v1.cni.cncf.io/network-status) and nodes, the Observer (every replica) publishes the
// readiness snapshot admission reads (health.Snapshot); the Controller (leader only) writes, on
// the vm-migration-network Setting's status, each eligible node's migration address, the Ready
// condition and the range's IP capacity (controller.go, observe.go), cleans whereabouts IP pools
// no migranet network uses and releases the allocations gone virt-handlers leaked (ippools.go,
// poolcheck.go); Offenders scans for pods and VMIs that attached the network before the guard
// policies existed (offenders.go). From the probe agents' PathReports the PathObserver (every
// replica) publishes the paths' health (health.PathStore) and PathStatus (leader only) writes the
// Healthy condition and status.paths (pathobserver.go, pathstatus.go); ProbePlacement (leader only)
// keeps the probe agent's DaemonSet on the nodes virt-handler may run on (probeplacement.go);
// PathAbort (leader only) aborts a streaming pre-copy migration whose path fails, deleting its
// VMIM as `virtctl migrate-cancel` does (rule runningPathHealthy, health.DecideAbort;
// pathabort.go).
// It exports the same observation as Prometheus gauges (metrics.go) and records an event on each condition transition. It imports only settings.
//
// The per-node probe agent that writes the PathReports is netcontroller/nodeagent: a process of
// its own on every node, importing only the pure domain (settings) and the API types, never this
// package. The two meet only in the PathReport API.
package netcontroller
