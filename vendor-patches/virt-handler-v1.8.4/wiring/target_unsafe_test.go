//go:build vp_unsafe_dial

package wiring

import (
	"path/filepath"

	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// startTarget without patch 0011: the proxy gets every socket by its plain path.
func startTarget(m migrationproxy.ProxyManager, key, _ string, paths ...string) error {
	return m.StartTargetListener(key, paths)
}

// startMigrationTarget without patch 0011: the socket list as v1.8.4's
// handleTargetMigrationProxy builds it, plain paths through the launcher's
// /var/run (virt-handler's pattern /proc/<pid>/root/var/run, here root/var/run).
func startMigrationTarget(m migrationproxy.ProxyManager, key, root string) error {
	runDir := filepath.Join(root, "var", "run")
	sockets := []string{filepath.Join(runDir, "libvirt/virtqemud-sock")}
	for _, port := range migrationproxy.GetMigrationPortsList(true) {
		sockets = append(sockets, migrationproxy.SourceUnixFile(filepath.Join(runDir, "kubevirt"), migrationproxy.ConstructProxyKey(key, port)))
	}
	return m.StartTargetListener(key, sockets)
}
