//go:build !vp_unpatched && !vp_unsafe_dial

package kvproxy

import (
	"fmt"
	"path/filepath"
	"strings"

	"kubevirt.io/kubevirt/pkg/safepath"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// SafeDial reports whether the harness was built against a series whose target
// proxy dials launcher sockets without following symlinks (patch 0011).
const SafeDial = true

// StartTarget starts key's target listeners, forwarding to the unix sockets at
// socketPaths, each inside root, the "virt-launcher's" mount root: handed to the
// proxy as migrationproxy.LauncherSocket (root, path below it), as virt-handler
// hands the launcher's sockets since patch 0011.
func StartTarget(m migrationproxy.ProxyManager, key, root string, socketPaths ...string) error {
	rootPath, err := safepath.JoinAndResolveWithRelativeRoot(root)
	if err != nil {
		return fmt.Errorf("launcher root %s: %w", root, err)
	}
	sockets := make([]migrationproxy.LauncherSocket, 0, len(socketPaths))
	for _, p := range socketPaths {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("socket %s is not inside the launcher root %s", p, root)
		}
		sockets = append(sockets, migrationproxy.LauncherSocket{Root: rootPath, Path: rel})
	}
	return m.StartTargetListener(key, sockets)
}
