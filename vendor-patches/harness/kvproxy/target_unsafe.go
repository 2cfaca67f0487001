//go:build vp_unpatched || vp_unsafe_dial

package kvproxy

import (
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// SafeDial reports whether the harness was built against a series whose target
// proxy dials launcher sockets without following symlinks (patch 0011).
const SafeDial = false

// StartTarget without patch 0011: the proxy gets every socket by its plain path
// (root is not told to it), as upstream v1.9.0's virt-handler hands them.
func StartTarget(m migrationproxy.ProxyManager, key, _ string, socketPaths ...string) error {
	return m.StartTargetListener(key, socketPaths)
}
