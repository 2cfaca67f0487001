// Package proxy tests the patched kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy
// on loopback: listener binding, connection ordering, half-close, leaks, mTLS, metrics.
package proxy
