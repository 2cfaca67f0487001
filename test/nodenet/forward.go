package nodenet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Forward listens on addr (host:port) inside namespace n and relays every connection to the same
// address in this process' own namespace: how a plugin running in a node's namespace reaches the
// API server on the machine's loopback, under the address its kubeconfig names. Close stops it.
func Forward(n NS, addr string) (io.Closer, error) {
	ln, err := listenIn(n, addr)
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, addr: addr}
	go f.serve()
	return f, nil
}

// listenIn opens a TCP listener inside n (ListenIn).
func listenIn(n NS, addr string) (net.Listener, error) { return ListenIn(n, addr) }

// ListenIn opens a TCP listener on addr (host:port) inside namespace n: a socket belongs to the
// namespace of the thread that creates it, and stays there once the thread leaves (see InNS).
func ListenIn(n NS, addr string) (net.Listener, error) {
	var ln net.Listener
	err := InNS(n, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

// DialIn opens a TCP connection from local (an address of namespace n, port chosen by the kernel)
// to remote (host:port), made inside n; the connect may take up to timeout (0: the kernel's own
// SYN retries), and ctx cancels it. The connection's reads and writes work from any thread.
func DialIn(ctx context.Context, n NS, local netip.Addr, remote string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := InNS(n, func() error {
		// The socket is created by the dialer on this thread, inside n; its connect may wait in
		// the kernel, which keeps the thread in n meanwhile.
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: local.AsSlice()}}
		var err error
		conn, err = d.DialContext(ctx, "tcp", remote)
		return err
	})
	return conn, err
}

// InNS runs fn on a locked thread moved into namespace n, then moves the thread back.
//
// The thread must outlive this call: a child process started with Pdeathsig (the local cluster's
// kube-apiserver, etcd, kwok) is killed when the *thread* that forked it exits, and the runtime
// ends a thread whose goroutine exits while locked. So the thread returns to its own namespace
// and is unlocked; if it cannot return, it stays locked and parked for good instead of exiting.
func InNS(n NS, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer home.Close()
		target, err := os.Open(n.Path())
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("entering %s: %w", n, err)
			return
		}
		err = fn()
		if rerr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); rerr != nil {
			ch <- err
			select {} // never exit on a thread left in n: keep it, locked
		}
		runtime.UnlockOSThread()
		ch <- err
	}()
	return <-ch
}

type forwarder struct {
	ln   net.Listener
	addr string
	wg   sync.WaitGroup
}

func (f *forwarder) serve() {
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer in.Close()
			out, err := net.Dial("tcp", f.addr)
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{})
			go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); close(done) }()
			_, _ = io.Copy(in, out)
			in.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

func (f *forwarder) Close() error { return f.ln.Close() }
