package kvproxy

import (
	"crypto/tls"
	"fmt"

	v1 "kubevirt.io/api/core/v1"
	"kubevirt.io/kubevirt/pkg/pointer"
	"kubevirt.io/kubevirt/pkg/testutils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// NewManager returns a ProxyManager whose target listeners bind bindIP. With pki
// nil, migration TLS is disabled in the cluster config (migrations.disableTLS).
func NewManager(bindIP string, pki *PKI) (migrationproxy.ProxyManager, error) {
	cfg, _, _ := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{
		MigrationConfiguration: &v1.MigrationConfiguration{DisableTLS: pointer.P(pki == nil)},
	})
	var server, client *tls.Config
	if pki != nil {
		server, client = pki.ServerConfig(), pki.ClientConfig()
	}
	m, err := newManager(bindIP, server, client, client, cfg)
	if err != nil {
		return nil, fmt.Errorf("migration proxy manager: %w", err)
	}
	return m, nil
}

// RegisterMetrics registers the proxy metrics (a no-op without the patches).
func RegisterMetrics() error {
	return registerMetrics()
}
