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
// creates it, so the listener is made on a locked thread moved into n, which is never unlocked
// (the runtime ends that thread instead of reusing it in the wrong namespace).
func listenIn(n NS, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(n.Path())
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("entering %s: %w", n, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
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
