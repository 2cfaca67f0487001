//go:build !vp_unpatched

package kvproxy

import (
	"crypto/tls"

	virtconfig "kubevirt.io/kubevirt/pkg/virt-config"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// Patched reports whether the harness was built against the patched series.
const Patched = true

func newManager(bindIP string, server, client, migration *tls.Config, cfg *virtconfig.ClusterConfig) (migrationproxy.ProxyManager, error) {
	return migrationproxy.NewMigrationProxyManagerForAddress(bindIP, server, client, migration, cfg)
}

func registerMetrics() error {
	return migrationproxy.SetupMetrics()
}
