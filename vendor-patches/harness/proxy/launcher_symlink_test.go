package proxy

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// launcherFS is a stand-in for a target virt-launcher's filesystem as virt-handler
// sees it (/proc/<pid>/root): whatever is below root belongs to the launcher,
// which can put a symlink anywhere there. host is outside it: virt-handler's side,
// where the launcher must not be able to send the proxy's connections.
type launcherFS struct {
	root, host, key string
}

func newLauncherFS(t *testing.T) *launcherFS {
	t.Helper()
	// Not t.TempDir: a unix socket path must stay under 108 bytes.
	base, err := os.MkdirTemp("", "vpl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	l := &launcherFS{root: filepath.Join(base, "launcher"), host: filepath.Join(base, "host"), key: fmt.Sprintf("vmi-%x", b)}
	for _, d := range []string{filepath.Dir(l.virtqemud()), filepath.Dir(l.perPort()), l.host} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// virtqemud and perPort are where virt-handler's target proxy finds virtqemud's
// socket and the direct migration port's socket in the launcher (v1.9.0's
// migration-target.go, below the launcher's /run).
func (l *launcherFS) virtqemud() string {
	return filepath.Join(l.root, "run", "libvirt", "virtqemud-sock")
}

func (l *launcherFS) perPort() string {
	return migrationproxy.SourceUnixFile(filepath.Join(l.root, "run", "kubevirt"),
		migrationproxy.ConstructProxyKey(l.key, migrationproxy.LibvirtDirectMigrationPort))
}

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// probe connects to the target listener on port and sends a marker; it returns
// the connection (closed by the test's cleanup).
func probe(t *testing.T, port, marker string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 2*time.Second)
	if err != nil {
		t.Fatalf("target listener %s: %v", port, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(marker)); err != nil {
		t.Fatalf("write to the target listener: %v", err)
	}
	return c
}

// received is what a connection accepted on ln within d carries (the marker),
// or "" when nothing connected.
func received(ln net.Listener, n int, d time.Duration) (string, bool) {
	c := acceptWithin(ln, d)
	if c == nil {
		return "", false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, n)
	m, _ := io.ReadFull(c, buf)
	return string(buf[:m]), true
}

// TestTargetRefusesLauncherSymlinks is CVE-2026-13622 (patch 0011): the target
// proxy dials sockets in the target launcher's filesystem. A symlink the launcher
// plants where virtqemud's socket or a migration port's socket should be (or at
// a directory on the way) must not take the proxy's connection to a socket
// outside the launcher: the dial is refused and the inbound connection closed.
// Once the real socket is there, not a symlink, it is dialled as before.
func TestTargetRefusesLauncherSymlinks(t *testing.T) {
	cases := []struct {
		name string
		// port is the migration port the socket serves: 0 for virtqemud's.
		port int
		// plant puts the symlink in place and returns the listener outside the
		// launcher that the symlink leads to.
		plant func(t *testing.T, l *launcherFS) net.Listener
		// unplant removes it and returns the socket path to listen on for real.
		unplant func(t *testing.T, l *launcherFS) string
	}{
		{
			name: "virtqemud socket is a symlink",
			plant: func(t *testing.T, l *launcherFS) net.Listener {
				victim := listenUnix(t, filepath.Join(l.host, "private-sock"))
				symlink(t, filepath.Join(l.host, "private-sock"), l.virtqemud())
				return victim
			},
			unplant: func(t *testing.T, l *launcherFS) string { remove(t, l.virtqemud()); return l.virtqemud() },
		},
		{
			name: "per-port socket is a symlink",
			port: migrationproxy.LibvirtDirectMigrationPort,
			plant: func(t *testing.T, l *launcherFS) net.Listener {
				victim := listenUnix(t, filepath.Join(l.host, "private-sock"))
				symlink(t, filepath.Join(l.host, "private-sock"), l.perPort())
				return victim
			},
			unplant: func(t *testing.T, l *launcherFS) string { remove(t, l.perPort()); return l.perPort() },
		},
		{
			name: "per-port socket's directory is a symlink",
			port: migrationproxy.LibvirtDirectMigrationPort,
			plant: func(t *testing.T, l *launcherFS) net.Listener {
				victim := listenUnix(t, filepath.Join(l.host, filepath.Base(l.perPort())))
				dir := filepath.Dir(l.perPort())
				remove(t, dir)
				symlink(t, l.host, dir)
				return victim
			},
			unplant: func(t *testing.T, l *launcherFS) string {
				dir := filepath.Dir(l.perPort())
				remove(t, dir)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				return l.perPort()
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLauncherFS(t)
			victim := tc.plant(t, l)
			m, err := kvproxy.NewManager("127.0.0.1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := kvproxy.StartTarget(m, l.key, l.root, l.virtqemud(), l.perPort()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.StopTargetListener(l.key) })
			port := ""
			for p, migrationPort := range m.GetTargetListenerPorts(l.key) {
				if migrationPort == tc.port {
					port = p
				}
			}
			if port == "" {
				t.Fatalf("no target listener for port %d: %v", tc.port, m.GetTargetListenerPorts(l.key))
			}

			const marker = "planted"
			c := probe(t, port, marker)
			if got, ok := received(victim, len(marker), 2*time.Second); ok {
				t.Fatalf("%s: the target proxy dialled through the planted symlink: a socket outside the launcher accepted a connection (received %q)", tc.name, got)
			}
			// Refused: the proxy closes the inbound leg (nothing to forward to):
			// EOF, or a reset since the marker was never read.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("%s: inbound connection not closed after the refused dial (read %d bytes, %v)", tc.name, n, err)
			}

			// The real socket, not a symlink, is dialled.
			real := listenUnix(t, tc.unplant(t, l))
			const marker2 = "the real socket"
			probe(t, port, marker2)
			if got, ok := received(real, len(marker2), 5*time.Second); !ok || got != marker2 {
				t.Fatalf("%s: the real launcher socket, once there, got %q (connected: %v), want %q", tc.name, got, ok, marker2)
			}
			if got, ok := received(victim, 1, 200*time.Millisecond); ok {
				t.Fatalf("%s: a socket outside the launcher accepted a connection (received %q)", tc.name, got)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}
