package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// streamBuffer is the read and write size of the bench's sender and sink.
const streamBuffer = 1 << 20

// sinkWait bounds one "sinkwait" command; the caller asks again while Done is false.
const sinkWait = 20 * time.Second

// streams are the bench's one-shot byte streams: a sink accepts one connection
// and reads Size bytes; a sender dials and writes Size bytes. Both run in the
// background so no command outlives the client's answer timeout.
type streams struct {
	mu    sync.Mutex
	sinks map[string]*sink // by Key
}

type sink struct {
	done     chan struct{}
	end      time.Time
	received int64
	err      error
}

func (s *streams) handle(req *Request, resp *Response) error {
	switch req.Op {
	case "sink":
		return s.startSink(req, resp)
	case "sinkwait":
		return s.waitSink(req, resp)
	default: // "send"
		return s.send(req, resp)
	}
}

// startSink listens on Network/Addr ("ip:0" or a socket path) and answers the
// listening port (tcp) in Ports["sink"].
func (s *streams) startSink(req *Request, resp *Response) error {
	if req.Size <= 0 {
		return errors.New("sink: size must be positive")
	}
	ln, err := net.Listen(req.Network, req.Addr)
	if err != nil {
		return err
	}
	k := &sink{done: make(chan struct{})}
	s.mu.Lock()
	if s.sinks == nil {
		s.sinks = map[string]*sink{}
	}
	if _, dup := s.sinks[req.Key]; dup {
		s.mu.Unlock()
		ln.Close()
		return fmt.Errorf("sink %q exists", req.Key)
	}
	s.sinks[req.Key] = k
	s.mu.Unlock()
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		resp.Ports = map[string]int{"sink": a.Port}
	}
	go k.run(ln, req.Size, req.Kernel)
	return nil
}

// run accepts one connection (within 60 s) and reads until size bytes arrived;
// kernel: discarding them in the kernel (kernelSink).
func (k *sink) run(ln net.Listener, size int64, kernel bool) {
	defer close(k.done)
	if d, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Now().Add(60 * time.Second))
	}
	c, err := ln.Accept()
	ln.Close()
	if err != nil {
		k.err = err
		return
	}
	defer c.Close()
	if kernel {
		k.received, k.err = kernelSink(c, size)
		k.end = time.Now()
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(120 * time.Second))
	buf := make([]byte, streamBuffer)
	for k.received < size {
		n, err := c.Read(buf)
		k.received += int64(n)
		if err != nil {
			k.err = fmt.Errorf("after %d of %d bytes: %w", k.received, size, err)
			return
		}
	}
	k.end = time.Now()
}

// waitSink answers once the sink is done or after sinkWait (Done false). A
// finished sink is forgotten.
func (s *streams) waitSink(req *Request, resp *Response) error {
	s.mu.Lock()
	k, ok := s.sinks[req.Key]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no sink %q", req.Key)
	}
	select {
	case <-k.done:
	case <-time.After(sinkWait):
		return nil
	}
	s.mu.Lock()
	delete(s.sinks, req.Key)
	s.mu.Unlock()
	resp.Done, resp.Received = true, k.received
	if k.err != nil {
		return k.err
	}
	resp.End = k.end.UnixNano()
	return nil
}

// send dials Network/Addr and writes Size random bytes in the background
// (Kernel: without copying them, kernelSend); the answer carries the wall-clock
// time just before the dial.
func (s *streams) send(req *Request, resp *Response) error {
	if req.Size <= 0 {
		return errors.New("send: size must be positive")
	}
	buf := make([]byte, streamBuffer)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	start := time.Now()
	c, err := net.DialTimeout(req.Network, req.Addr, 5*time.Second)
	if err != nil {
		return err
	}
	resp.Start = start.UnixNano()
	if req.Kernel {
		go func() {
			defer c.Close()
			_ = kernelSend(c, buf, req.Size) // the sink reports the shortfall
		}()
		return nil
	}
	go func() {
		defer c.Close()
		_ = c.SetWriteDeadline(time.Now().Add(120 * time.Second))
		for left := req.Size; left > 0; {
			chunk := buf
			if left < int64(len(chunk)) {
				chunk = chunk[:left]
			}
			n, err := c.Write(chunk)
			left -= int64(n)
			if err != nil {
				return // the sink reports the shortfall
			}
		}
	}()
	return nil
}
