// Package wiring tests, in the patched v1.8.4 tree, the code cmd/virt-handler
// runs to build its migration proxy: virthandler.NewMigrationProxyManager
// (patch 0006) resolves the migration address with FindMigrationIP and binds the
// target listeners to it. Each test runs in a network namespace of its own with
// a pod interface and, where the dedicated network is attached, migration0.
package wiring
