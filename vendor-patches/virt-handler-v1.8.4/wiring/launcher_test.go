package wiring

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"kubevirt.io/kubevirt/pkg/pointer"
	"kubevirt.io/kubevirt/pkg/testutils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// TestMigrationTargetRefusesLauncherSymlinks is CVE-2026-13622 (patch 0011) in
// the v1.8.4 tree whose virt-handler builds: the target proxy of a block
// migration, started with the socket list virt-handler's migration target
// controller builds, forwards into a virt-launcher's filesystem (root, standing
// for /proc/<pid>/root; /var/run a symlink to ../run as in the launcher image).
// A symlink the launcher plants at virtqemud's socket, at a migration port's
// socket or at their directory must not lead the proxy to a socket outside the
// launcher: the dial is refused. Then the real sockets, where the launcher puts
// them, are dialled: virtqemud's and both ports'.
func TestMigrationTargetRefusesLauncherSymlinks(t *testing.T) {
	const key = "vmi-launcher"
	perPort := func(root string, port int) string {
		return migrationproxy.SourceUnixFile(filepath.Join(root, "run", "kubevirt"), migrationproxy.ConstructProxyKey(key, port))
	}
	virtqemud := func(root string) string { return filepath.Join(root, "run", "libvirt", "virtqemud-sock") }
	cases := []struct {
		name string
		port int // 0: virtqemud's socket
		// plant returns the path of a socket outside the launcher that the
		// symlink it plants leads to.
		plant func(t *testing.T, root, host string) string
	}{
		{"virtqemud socket is a symlink", 0, func(t *testing.T, root, host string) string {
			return plantLink(t, filepath.Join(host, "private-sock"), virtqemud(root))
		}},
		{"per-port socket (49152) is a symlink", migrationproxy.LibvirtDirectMigrationPort, func(t *testing.T, root, host string) string {
			return plantLink(t, filepath.Join(host, "private-sock"), perPort(root, migrationproxy.LibvirtDirectMigrationPort))
		}},
		{"per-port socket (49153) directory is a symlink", migrationproxy.LibvirtBlockMigrationPort, func(t *testing.T, root, host string) string {
			dir := filepath.Dir(perPort(root, migrationproxy.LibvirtBlockMigrationPort))
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			plantLink(t, host, dir)
			return filepath.Join(host, filepath.Base(perPort(root, migrationproxy.LibvirtBlockMigrationPort)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Not t.TempDir: a unix socket path must stay under 108 bytes.
			base, err := os.MkdirTemp("", "vpw")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(base)
			root, host := filepath.Join(base, "launcher"), filepath.Join(base, "host")
			for _, d := range []string{filepath.Dir(virtqemud(root)), filepath.Dir(perPort(root, 0)), filepath.Join(root, "var"), host} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("../run", filepath.Join(root, "var", "run")); err != nil {
				t.Fatal(err)
			}
			victimPath := tc.plant(t, root, host)
			victim, err := net.Listen("unix", victimPath)
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Close()

			cfg, _, _ := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{
				MigrationConfiguration: &v1.MigrationConfiguration{DisableTLS: pointer.P(true)},
			})
			m, err := migrationproxy.NewMigrationProxyManagerForAddress("127.0.0.1", nil, nil, nil, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := startMigrationTarget(m, key, root); err != nil {
				t.Fatal(err)
			}
			defer m.StopTargetListener(key)
			ports := map[int]string{}
			for listener, port := range m.GetTargetListenerPorts(key) {
				ports[port] = listener
			}
			if len(ports) != 3 {
				t.Fatalf("target listeners %v, want virtqemud's, 49152's and 49153's", m.GetTargetListenerPorts(key))
			}

			c, err := sendTo(ports[tc.port], "planted")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got, ok := receivedOn(victim, len("planted"), 2*time.Second); ok {
				t.Fatalf("%s: the target proxy dialled through the planted symlink: a socket outside the launcher accepted a connection (received %q)", tc.name, got)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("%s: inbound connection not closed after the refused dial (read %d bytes, %v)", tc.name, n, err)
			}

			// The launcher's real sockets, where it puts them: the symlink gone,
			// each socket receives what is sent to its port's listener.
			for _, p := range []string{virtqemud(root), perPort(root, migrationproxy.LibvirtDirectMigrationPort),
				perPort(root, migrationproxy.LibvirtBlockMigrationPort), filepath.Dir(perPort(root, 0))} {
				if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.MkdirAll(filepath.Dir(perPort(root, 0)), 0o755); err != nil {
				t.Fatal(err)
			}
			for port, path := range map[int]string{
				0: virtqemud(root),
				migrationproxy.LibvirtDirectMigrationPort: perPort(root, migrationproxy.LibvirtDirectMigrationPort),
				migrationproxy.LibvirtBlockMigrationPort:  perPort(root, migrationproxy.LibvirtBlockMigrationPort),
			} {
				real, err := net.Listen("unix", path)
				if err != nil {
					t.Fatal(err)
				}
				defer real.Close()
				marker := fmt.Sprintf("to port %d", port)
				c, err := sendTo(ports[port], marker)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if got, ok := receivedOn(real, len(marker), 5*time.Second); !ok || got != marker {
					t.Errorf("%s: the launcher's real socket %s got %q (connected: %v), want %q", tc.name, path, got, ok, marker)
				}
			}
			if got, ok := receivedOn(victim, 1, 200*time.Millisecond); ok {
				t.Errorf("%s: a socket outside the launcher accepted a connection (received %q)", tc.name, got)
			}
		})
	}
}

func plantLink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return target
}

// sendTo connects to the target listener on port (loopback) and sends marker.
func sendTo(port, marker string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("target listener %q: %w", port, err)
	}
	if _, err := c.Write([]byte(marker)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// receivedOn is what a connection accepted on ln within d carries, n bytes at
// most; false when nothing connected.
func receivedOn(ln net.Listener, n int, d time.Duration) (string, bool) {
	ul := ln.(*net.UnixListener)
	_ = ul.SetDeadline(time.Now().Add(d))
	defer ul.SetDeadline(time.Time{})
	c, err := ul.Accept()
	if err != nil {
		return "", false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, n)
	m, _ := io.ReadFull(c, buf)
	return string(buf[:m]), true
}
