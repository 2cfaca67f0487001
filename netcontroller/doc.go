// Package netcontroller reports how far the cluster has come onto the migration network: from
// virt-handler pods (their k8s.v1.cni.cncf.io/network-status) and nodes it publishes, on the
// vm-migration-network Setting's status, each eligible node's migration address, the Ready
// condition and the range's IP capacity, cleans whereabouts IP pools no migranet network uses,
// releases the allocations gone virt-handlers leaked in the current range's pool, and keeps the
// read-only readiness snapshot the admission webhook consumes. It exports the same observation as
// Prometheus gauges (metrics.go) and records an event on each condition transition.
package netcontroller
