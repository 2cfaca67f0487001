package proxy

import (
	"crypto/rand"
	"fmt"
	"github.com/migranet/migranet/vendor-patches/harness/poll"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	ephemeraldiskutils "kubevirt.io/kubevirt/pkg/ephemeral-disk-utils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// proxyLog is KubeVirt's log of this process: the proxies' refusals per uid.
var proxyLog *kvproxy.ProxyLog

func TestMain(m *testing.M) {
	ephemeraldiskutils.MockDefaultOwnershipManager()
	proxyLog = kvproxy.CaptureLogs(os.Stderr)
	if err := kvproxy.RegisterMetrics(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// pair is a target and a source proxy for one migration key on loopback, the
// target forwarding to a unix "QEMU" socket.
type pair struct {
	key, dir   string
	backend    net.Listener
	target     migrationproxy.ProxyManager
	source     migrationproxy.ProxyManager
	sourceSock string
}

func newPair(t *testing.T, pki *kvproxy.PKI) *pair {
	t.Helper()
	dir := t.TempDir()
	// A uid of this test alone: a series left behind by another test must not
	// stand in for this one's.
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	p := &pair{key: fmt.Sprintf("vmi-%x", b), dir: dir}
	backendPath := filepath.Join(dir, p.key+"-49152")
	ln, err := net.Listen("unix", backendPath)
	if err != nil {
		t.Fatal(err)
	}
	p.backend = ln
	if p.target, err = kvproxy.NewManager("127.0.0.1", pki); err != nil {
		t.Fatal(err)
	}
	if p.source, err = kvproxy.NewManager("127.0.0.1", pki); err != nil {
		t.Fatal(err)
	}
	if err := kvproxy.StartTarget(p.target, p.key, dir, backendPath); err != nil {
		t.Fatal(err)
	}
	ports := p.target.GetTargetListenerPorts(p.key)
	if len(ports) != 1 {
		t.Fatalf("target ports %v, want one", ports)
	}
	if err := p.source.StartSourceListener(p.key, "127.0.0.1", ports, dir); err != nil {
		t.Fatal(err)
	}
	files := p.source.GetSourceListenerFiles(p.key)
	if len(files) != 1 {
		t.Fatalf("source files %v, want one", files)
	}
	p.sourceSock = files[0]
	t.Cleanup(p.stop)
	return p
}

func (p *pair) targetPort(t *testing.T) string {
	t.Helper()
	for port := range p.target.GetTargetListenerPorts(p.key) {
		return port
	}
	t.Fatal("no target port")
	return ""
}

func (p *pair) stop() {
	p.source.StopSourceListener(p.key)
	p.target.StopTargetListener(p.key)
	p.backend.Close()
}

// acceptWithin returns the next backend connection, or nil after d.
func acceptWithin(ln net.Listener, d time.Duration) net.Conn {
	ul := ln.(*net.UnixListener)
	if err := ul.SetDeadline(time.Now().Add(d)); err != nil {
		return nil
	}
	defer ul.SetDeadline(time.Time{})
	c, err := ul.Accept()
	if err != nil {
		return nil
	}
	return c
}

// usage is the proxies' share of the process: open sockets and pipes, and the
// goroutines running the migration proxy's code.
type usage struct{ fds, goroutines int }

func current(t *testing.T) usage {
	t.Helper()
	fds, err := kvproxy.OpenFDs()
	if err != nil {
		t.Fatal(err)
	}
	return usage{fds: fds, goroutines: kvproxy.ProxyGoroutines()}
}

// noGC stops garbage collection until the test ends: a leaked socket would be
// closed by its finalizer at the next collection, before the count.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// expectBack fails unless fds and proxy goroutines return to base within 3 s.
func expectBack(t *testing.T, what string, base usage) {
	t.Helper()
	var now usage
	if !poll.Until(3*time.Second, func() bool {
		now = current(t)
		return now.fds <= base.fds && now.goroutines <= base.goroutines
	}) {
		t.Errorf("%s: leaked: fds %d -> %d, proxy goroutines %d -> %d", what, base.fds, now.fds, base.goroutines, now.goroutines)
	}
}
