package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one control-plane binary started by the cluster, its output in <dir>/<name>.log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
	// grace is how long stop waits after SIGTERM before SIGKILL.
	grace time.Duration
}

// startProcess starts bin with args; the child dies with this process (Pdeathsig), so a killed
// test or `make dev` leaves nothing behind.
func startProcess(dir, name, bin string, args ...string) (*process, error) {
	return startProcessWithEnv(dir, name, bin, nil, args...)
}

// startProcessWithEnv is startProcess with extra environment variables (KEY=value).
func startProcessWithEnv(dir, name, bin string, env []string, args ...string) (*process, error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logf, done: make(chan struct{}), grace: 10 * time.Second}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// exited reports whether the process ended, with its error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after the grace period.
func (p *process) stop() {
	grace := p.grace
	if done, _ := p.exited(); !done {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT) // a paused process acts on SIGTERM only once continued
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	p.log.Close()
}

// tail returns the last n bytes of the process log, for error messages.
func (p *process) tail(n int64) string {
	f, err := os.Open(p.log.Name())
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// waitFor polls check until it succeeds, the process exits, or the timeout passes.
func (p *process) waitFor(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited (%v); log tail:\n%s", p.name, err, p.tail(4000))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v; log tail:\n%s", p.name, timeout, last, p.tail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
