//go:build !vp_unsafe_dial

package wiring

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"kubevirt.io/kubevirt/pkg/safepath"
	virthandler "kubevirt.io/kubevirt/pkg/virt-handler"
	"kubevirt.io/kubevirt/pkg/virt-handler/isolation"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// startTarget starts key's target listeners forwarding to the unix sockets at
// paths, each inside root (a launcher's mount root), handed to the proxy as
// launcher sockets (patch 0011).
func startTarget(m migrationproxy.ProxyManager, key, root string, paths ...string) error {
	rootPath, err := safepath.JoinAndResolveWithRelativeRoot(root)
	if err != nil {
		return err
	}
	var sockets []migrationproxy.LauncherSocket
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("socket %s is not inside %s", p, root)
		}
		sockets = append(sockets, migrationproxy.LauncherSocket{Root: rootPath, Path: rel})
	}
	return m.StartTargetListener(key, sockets)
}

// launcherAt is the isolation result of a virt-launcher whose mount root is
// root (what /proc/<pid>/root is on a node).
type launcherAt struct {
	isolation.IsolationResult
	root string
}

func (l launcherAt) MountRoot() (*safepath.Path, error) {
	return safepath.JoinAndResolveWithRelativeRoot(l.root)
}

func (l launcherAt) Pid() int { return os.Getpid() }

// startMigrationTarget starts the target listeners of one block migration of key
// into the launcher whose mount root is root, with the socket list virt-handler's
// migration target controller builds (virthandler.MigrationTargetSockets, which
// handleTargetMigrationProxy calls since patch 0011).
func startMigrationTarget(m migrationproxy.ProxyManager, key, root string) error {
	sockets, err := virthandler.MigrationTargetSockets(launcherAt{root: root}, key, true)
	if err != nil {
		return err
	}
	return m.StartTargetListener(key, sockets)
}
