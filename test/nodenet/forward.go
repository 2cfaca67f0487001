package nodenet

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"

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

// listenIn opens a TCP listener inside n: a socket belongs to the namespace of the thread that
// creates it, so the listener is made on a locked thread moved into n and then moved back.
//
// The thread must outlive this call: a child process started with Pdeathsig (the local cluster's
// kube-apiserver, etcd, kwok) is killed when the *thread* that forked it exits, and the runtime
// ends a thread whose goroutine exits while locked. So the thread returns to its own namespace
// and is unlocked; if it cannot return, it stays locked and parked for good instead of exiting.
func listenIn(n NS, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer home.Close()
		target, err := os.Open(n.Path())
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("entering %s: %w", n, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		if rerr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); rerr != nil {
			ch <- result{ln, err}
			select {} // never exit on a thread left in n: keep it, locked
		}
		runtime.UnlockOSThread()
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
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
