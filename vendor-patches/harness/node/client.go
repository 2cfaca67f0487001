package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/netlab"
)

// AnswerTimeout bounds the wait for a node's answer to one command.
const AnswerTimeout = 30 * time.Second

// Client drives one node process. Do and Close never wait longer than their
// documented bounds: a node that does not answer in time is killed, and every
// later command fails at once instead of reading a stale answer.
type Client struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	answers chan []byte   // one line per answer; closed when the node's stdout ends
	quit    chan struct{} // closed when the client breaks: answers are dropped
	exited  chan struct{} // closed once the node process has been reaped

	mu     sync.Mutex // one command at a time
	broken error      // set once the request/answer pairing can no longer be trusted
}

// Spawn re-executes the current (test) binary inside namespace ns as a node.
func Spawn(ns string) (*Client, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return SpawnBinary(ns, self)
}

// SpawnBinary runs bin (a test binary of this module, or a program that calls
// Serve, such as the bench's upstream peer) inside namespace ns as a node.
func SpawnBinary(ns, bin string) (*Client, error) {
	cmd := netlab.Exec(ns, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvRole+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Client{cmd: cmd, in: in, answers: make(chan []byte), quit: make(chan struct{}), exited: make(chan struct{})}
	readerDone := make(chan struct{})
	// The only reader of the node's stdout: answers arrive in request order.
	go func() {
		defer close(readerDone)
		defer close(c.answers)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			select {
			case c.answers <- append([]byte(nil), sc.Bytes()...):
			case <-c.quit: // nobody will ever take it: keep draining to EOF
			}
		}
	}()
	// cmd.Wait closes the stdout pipe, so it runs only once the reader is done.
	go func() {
		<-readerDone
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Do sends req and waits at most AnswerTimeout for the answer.
func (c *Client) Do(req Request) (Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return Response{}, fmt.Errorf("node %q: %w", req.Op, c.broken)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.breakWith(fmt.Errorf("writing to the node: %w", err))
		return Response{}, c.broken
	}
	timer := time.NewTimer(AnswerTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-c.answers:
		if !ok {
			c.breakWith(errors.New("node exited"))
			return Response{}, fmt.Errorf("node %q: %w", req.Op, c.broken)
		}
		var r Response
		if err := json.Unmarshal(line, &r); err != nil {
			c.breakWith(fmt.Errorf("bad answer %q: %w", line, err))
			return Response{}, c.broken
		}
		if r.Err != "" {
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-timer.C:
		c.breakWith(fmt.Errorf("no answer to %q in %s (node killed)", req.Op, AnswerTimeout))
		return Response{}, c.broken
	}
}

// breakWith records why the client is unusable and kills the node. c.mu held.
func (c *Client) breakWith(err error) {
	if c.broken == nil {
		c.broken = err
		close(c.quit)
	}
	_ = c.cmd.Process.Kill()
}

// Close ends the node process: stdin closed, then killed if it has not exited
// within 5 s. It returns within about 10 s.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.in.Close()
	select {
	case <-c.exited:
		return
	case <-time.After(5 * time.Second):
	}
	c.breakWith(errors.New("closed"))
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		fmt.Fprintf(os.Stderr, "node pid %d did not exit after SIGKILL\n", c.cmd.Process.Pid)
	}
}
