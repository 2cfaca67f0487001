package nodeagent

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netlinkPeer is a netlink socket of this process standing where the kernel answers a
// neighbour request: the Neighbours under test send to it (dst), and it answers as told. A real
// socket of the same family: the request's poll, deadline and filters run as against the kernel.
type netlinkPeer struct {
	fd   int
	port uint32
}

func newNetlinkPeer(t *testing.T) *netlinkPeer {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	// Reads time out, so the peer's goroutine ends once the test has closed it.
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000}); err != nil {
		t.Fatal(err)
	}
	p := &netlinkPeer{fd: fd, port: sa.(*unix.SockaddrNetlink).Pid}
	t.Cleanup(func() { unix.Close(fd) })
	return p
}

// request waits for the request of the Neighbours under test and returns its sequence number and
// the port it came from.
func (p *netlinkPeer) request(t *testing.T) (seq, from uint32) {
	buf := make([]byte, 1<<16)
	for range 50 {
		n, sa, err := unix.Recvfrom(p.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		if n < unix.SizeofNlMsghdr {
			continue
		}
		return binary.NativeEndian.Uint32(buf[8:12]), sa.(*unix.SockaddrNetlink).Pid
	}
	t.Error("the peer got no request")
	return 0, 0
}

// send sends one netlink message of typ and seq from fd to port.
func sendNetlink(fd int, port uint32, typ uint16, seq uint32) error {
	b := make([]byte, unix.SizeofNlMsghdr+4)
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	return unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: port})
}

// TestNeighbourRequestDeadline: a neighbour request (the dump the agent's round and sweep make)
// returns within its timeout whatever its netlink peer does — no answer at all, a stream of
// messages of another sequence, its own sequence's end sent from another port — and returns the
// answer when the peer does answer after such a stream (the near miss).
// Catches: a blocking read without a deadline (the first case never returns), a deadline per read
// instead of per request (the second: every read returns in time, the request never), an answer
// accepted from anyone (the third returns nil).
func TestNeighbourRequestDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		// peer answers the request seq from port from; stop ends a stream.
		peer    func(p *netlinkPeer, from, seq uint32, stop chan struct{})
		wantErr error
	}{
		{"no answer", func(*netlinkPeer, uint32, uint32, chan struct{}) {}, ErrNoAnswer},
		{"a stream of another sequence", func(p *netlinkPeer, from, seq uint32, stop chan struct{}) {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				_ = sendNetlink(p.fd, from, unix.RTM_NEWNEIGH, seq+1)
			}
		}, ErrNoAnswer},
		{"its end from another port", func(p *netlinkPeer, from, seq uint32, _ chan struct{}) {
			other, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
			if err != nil {
				return
			}
			defer unix.Close(other)
			_ = unix.Bind(other, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
			_ = sendNetlink(other, from, unix.NLMSG_DONE, seq)
		}, ErrNoAnswer},
		{"answered after a stream of another sequence", func(p *netlinkPeer, from, seq uint32, _ chan struct{}) {
			for range 10 {
				_ = sendNetlink(p.fd, from, unix.RTM_NEWNEIGH, seq+1)
			}
			_ = sendNetlink(p.fd, from, unix.NLMSG_DONE, seq)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := newNetlinkPeer(t)
			n, err := openNeighbours(1, true)
			if err != nil {
				t.Fatal(err)
			}
			n.dst, n.Timeout = peer.port, timeout
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				seq, from := peer.request(t)
				tc.peer(peer, from, seq, stop)
			}()
			done := make(chan error, 1)
			began := time.Now()
			go func() { _, err := n.Entries(); done <- err }()
			select {
			case err = <-done:
			case <-time.After(timeout + 2*time.Second):
				// The request and the peer are left behind (Close would wait for the request).
				t.Fatalf("the request has not returned %s after its timeout of %s", 2*time.Second, timeout)
			}
			took := time.Since(began)
			close(stop)
			wg.Wait()
			n.Close()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && (took < timeout || took > timeout+time.Second) {
				t.Errorf("returned after %s, want about its timeout %s", took, timeout)
			}
		})
	}
}

// TestCloseWaitsForTheSweep: Prober.Close returns only once the sweep of neighbour entries has
// ended, though the sweep is inside a request its peer never answers, and no later than that
// request's end (no further request starts once Close was called); the neighbour socket is closed
// then (a request after it fails at once, on no descriptor). The near miss: a prober closed with
// no sweep running returns at once.
// Catches: Close closing the socket under a sweep still reading its descriptor number (which the
// next socket opened may reuse), not waiting for the sweep at all, and a sweep that, stopped while
// its ticker had fired, starts another request (select picks at random between ready cases: seen
// in CI, Close held 2 s past a 400 ms request). The sweeping case runs 4 times: such a sweep passes
// each with odds of one half at most.
func TestCloseWaitsForTheSweep(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, sweeping := range []bool{true, true, true, true, false} {
		peer := newNetlinkPeer(t)
		n, err := openNeighbours(1, true)
		if err != nil {
			t.Fatal(err)
		}
		n.dst, n.Timeout = peer.port, timeout
		p := NewProber(listen(t), testNet, 1500, 100*time.Millisecond, 1)
		p.UseNeighbours(n)
		if sweeping {
			p.RemoveNeighbours(10 * time.Millisecond) // sweeps every 10 ms: the first one asks the peer at once
			time.Sleep(50 * time.Millisecond)
		}
		began := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- p.Close() }()
		select {
		case err := <-closed:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				t.Fatal(err)
			}
		case <-time.After(timeout + 2*time.Second):
			t.Fatalf("sweeping %t: Close has not returned %s after the request's timeout", sweeping, 2*time.Second)
		}
		took := time.Since(began)
		joined := make(chan struct{})
		go func() { p.sweeping.Wait(); close(joined) }()
		select {
		case <-joined:
		case <-time.After(10 * time.Millisecond):
			t.Fatalf("sweeping %t: the sweep goroutine still runs after Close returned", sweeping)
		}
		if _, err := n.Entries(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("sweeping %t: a request after Close: %v, want net.ErrClosed", sweeping, err)
		}
		// The request in progress ends within timeout of Close (it began before); a second
		// request would end after 2 timeouts at the earliest.
		if sweeping && took >= timeout+timeout*4/5 {
			t.Errorf("Close during a sweep took %s: another request started after Close (timeout %s)", took, timeout)
		}
		if !sweeping && took > 50*time.Millisecond {
			t.Errorf("Close without a sweep took %s", took)
		}
	}
}
