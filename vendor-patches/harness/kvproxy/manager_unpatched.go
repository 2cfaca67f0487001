//go:build vp_unpatched

package kvproxy

import (
	"crypto/tls"

	virtconfig "kubevirt.io/kubevirt/pkg/virt-config"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// Patched reports whether the harness was built against the patched series.
const Patched = false

// newManager is upstream's constructor: bindIP is ignored, the target listener
// binds the wildcard address.
func newManager(_ string, server, client, migration *tls.Config, cfg *virtconfig.ClusterConfig) (migrationproxy.ProxyManager, error) {
	return migrationproxy.NewMigrationProxyManager(server, client, migration, cfg), nil
}

func registerMetrics() error { return nil }
