package kvproxy

import (
	"fmt"

	v1 "kubevirt.io/api/core/v1"
	"kubevirt.io/kubevirt/pkg/pointer"
	"kubevirt.io/kubevirt/pkg/testutils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// NewSwitchableManager is NewManager with both TLS configs of pki (not nil) and
// migrations.disableTLS in a cluster config that the returned function changes:
// virt-handler's proxy reads the KubeVirt CR's value when it starts a listener,
// so a value set before StartTargetListener or StartSourceListener applies to
// that listener, as a KubeVirt CR changed before the migration does.
func NewSwitchableManager(bindIP string, pki *PKI) (migrationproxy.ProxyManager, func(disableTLS bool), error) {
	if pki == nil {
		return nil, nil, fmt.Errorf("migration proxy manager: no PKI")
	}
	cfg, _, store := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{
		MigrationConfiguration: &v1.MigrationConfiguration{DisableTLS: pointer.P(false)},
	})
	m, err := newManager(bindIP, pki.ServerConfig(), pki.ClientConfig(), pki.ClientConfig(), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("migration proxy manager: %w", err)
	}
	set := func(disableTLS bool) {
		kv := testutils.GetFakeKubeVirtClusterConfig(store).DeepCopy()
		kv.Spec.Configuration.MigrationConfiguration.DisableTLS = pointer.P(disableTLS)
		testutils.UpdateFakeKubeVirtClusterConfig(store, kv)
	}
	return m, set, nil
}
