package sockmap

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// legs are the four sockets of a relay under test: peerUnix ("QEMU") is
// connected to proxyUnix, proxyTCP to peerTCP (the far proxy); the relay joins
// proxyUnix (its A side) and proxyTCP (its B side).
type legs struct {
	peerUnix, proxyUnix, proxyTCP, peerTCP net.Conn
	relay                                  *Relay
}

func newLegs(t *testing.T, flags int32) *legs {
	t.Helper()
	pu, xu := unixPair(t)
	xt, pt := tcpPair(t)
	l := &legs{peerUnix: pu, proxyUnix: xu, proxyTCP: xt, peerTCP: pt}
	r, err := NewRelay(fdOf(t, xu), fdOf(t, xt), flags)
	if err != nil {
		t.Fatalf("%v: run the harness as root on a kernel with CONFIG_BPF_SYSCALL and CONFIG_NET_SOCK_MSG", err)
	}
	l.relay = r
	t.Cleanup(func() {
		for _, c := range []net.Conn{pu, xu, xt, pt} {
			c.Close()
		}
		r.Close()
	})
	return l
}

func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "unix")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func fdOf(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// deliver writes data into from and reads len(data) bytes from to.
func deliver(from, to net.Conn, data []byte, timeout time.Duration) ([]byte, error) {
	werr := make(chan error, 1)
	go func() { _, err := from.Write(data); werr <- err }()
	to.SetReadDeadline(time.Now().Add(timeout))
	defer to.SetReadDeadline(time.Time{})
	got := make([]byte, len(data))
	n, err := io.ReadFull(to, got)
	if err != nil {
		return got[:n], fmt.Errorf("%d of %d bytes arrived: %w", n, len(data), err)
	}
	return got, <-werr
}

// TestRedirectsDeliverIntact: the kernel puts AF_UNIX stream and TCP sockets in
// one relay, and every redirect between them — egress (sent on the other
// socket) and ingress (queued for the other socket's reader), both directions —
// delivers the bytes intact, counted exactly by the verdict program.
func TestRedirectsDeliverIntact(t *testing.T) {
	const size = 4 << 20
	for _, mode := range []struct {
		name  string
		flags int32
	}{{"egress", 0}, {"ingress", FlagIngress}} {
		t.Run(mode.name, func(t *testing.T) {
			l := newLegs(t, mode.flags)
			// Egress: the bytes leave on the other proxy socket, towards its peer.
			// Ingress: they wait on the other proxy socket for its own reader.
			unixTo, tcpTo := l.peerTCP, l.peerUnix
			if mode.flags == FlagIngress {
				unixTo, tcpTo = l.proxyTCP, l.proxyUnix
			}
			for _, d := range []struct {
				name     string
				from, to net.Conn
			}{{"unix to tcp", l.peerUnix, unixTo}, {"tcp to unix", l.peerTCP, tcpTo}} {
				data := randomBytes(t, size)
				got, err := deliver(d.from, d.to, data, 30*time.Second)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s %s redirect: %v (equal: %v)", mode.name, d.name, err, bytes.Equal(got, data))
				}
			}
			aToB, bToA, err := l.relay.Counted()
			if err != nil || aToB != size || bToA != size {
				t.Fatalf("verdict counters: unix to tcp %d, tcp to unix %d, want %d each (%v)", aToB, bToA, size, err)
			}
		})
	}
}

// TestUnixToTCPKeepsFlowControl: with nobody reading at the TCP peer, the unix
// peer's writes stop once the buffers along the way are full — a redirected
// chunk stays charged to the unix sender until it has been sent on the TCP
// socket — and everything written arrives intact afterwards.
func TestUnixToTCPKeepsFlowControl(t *testing.T) {
	l := newLegs(t, 0)
	const offered = 64 << 20
	data := randomBytes(t, offered)
	l.peerUnix.SetWriteDeadline(time.Now().Add(time.Second))
	n, err := l.peerUnix.Write(data)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("unix peer wrote %d of %d bytes with nobody reading behind the relay (err %v): no flow control", n, offered, err)
	}
	// The bound: the unix sender's buffer, the TCP send buffer (tcp_wmem max
	// 4 MiB here) and the peer's receive window (tcp_rmem max 32 MiB).
	if n > 48<<20 {
		t.Fatalf("unix peer wrote %d MiB with nobody reading: more than the buffers on the way hold", n>>20)
	}
	t.Logf("finding: unix -> tcp egress stops the unix writer after %.1f MiB with nobody reading", float64(n)/(1<<20))
	got := make([]byte, n)
	start := time.Now()
	l.peerTCP.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(l.peerTCP, got); err != nil || !bytes.Equal(got, data[:n]) {
		t.Fatalf("reading the %d bytes back: %v (equal: %v)", n, err, bytes.Equal(got, data[:n]))
	}
	t.Logf("read back in %v", time.Since(start).Round(time.Millisecond))
}

// TestTCPToUnixQueuesWithoutBound records why the relay cannot carry TCP ->
// unix: the verdict runs on every chunk the TCP socket receives and hands it to
// the unix socket's backlog at once, so the TCP window never closes however
// slowly the unix peer reads, and the backlog drains to the unix peer in
// bursts. It fails only if the bytes arrive damaged.
func TestTCPToUnixQueuesWithoutBound(t *testing.T) {
	l := newLegs(t, 0)
	const offered = 64 << 20
	data := randomBytes(t, offered)
	l.peerTCP.SetWriteDeadline(time.Now().Add(5 * time.Second))
	n, err := l.peerTCP.Write(data)
	_, bToA, _ := l.relay.Counted()
	if err == nil {
		t.Logf("finding: tcp -> unix egress: the TCP peer wrote all %d MiB with nobody reading at the unix peer; the verdict had taken %.1f MiB into the unix leg's backlog", offered>>20, float64(bToA)/(1<<20))
	} else {
		t.Logf("finding: tcp -> unix egress stopped the TCP writer after %.1f MiB (%v): this kernel bounds the backlog, revisit the design", float64(n)/(1<<20), err)
	}
	const sample = 8 << 20
	start := time.Now()
	got := make([]byte, sample)
	l.peerUnix.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadFull(l.peerUnix, got); err != nil || !bytes.Equal(got, data[:sample]) {
		t.Fatalf("reading %d bytes at the unix peer: %v (equal: %v)", sample, err, bytes.Equal(got, data[:sample]))
	}
	el := time.Since(start)
	t.Logf("finding: the unix peer read the first %d MiB of the backlog in %v (%.1f MiB/s)", sample>>20, el.Round(time.Millisecond), float64(sample)/(1<<20)/el.Seconds())
}
