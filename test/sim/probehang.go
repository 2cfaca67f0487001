package sim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/migranet/migranet/netcontroller/nodeagent"
)

// A probe round hung in a call that never returns, while the agent process lives on: a read of
// /proc can block on kernel locks, and no deadline reaches a blocked read (the round's other calls
// have one). The agent of a node made Hangable runs in a mount namespace of its own, a slave of
// the host's (the node networks' mounts still reach it, its own reach nobody), where the host's
// /proc/1 is the lab's folder holding copies of the neighbour-table statistics the round reads
// when it begins (nodeagent.ReadHostNeighbourStats, <proc>/1/net/stat/…). Hang swaps those copies
// for FIFOs nobody writes to: the next round blocks in their open for good, while the process
// still answers its peers' probes and its health checks. Only its watchdog (/healthz) can say
// so.

// hangScript covers /proc/1 with the folder $1 and runs the agent ($2 …) in its place (PID kept).
const hangScript = `set -e; mount --bind "$1" /proc/1; shift; exec "$@"`

// hangDir is the folder that covers /proc/1 for node's agent.
func (a *ProbeAgents) hangDir(node string) string { return filepath.Join(a.Dir, "hang-"+node) }

// Hangable restarts node's agent in a mount namespace where Hang can stop its rounds; the agent
// runs as before until then. It reports an error when there is no agent on node.
func (a *ProbeAgents) Hangable(node string) error {
	dir := a.hangDir(node)
	if err := os.MkdirAll(filepath.Join(dir, "net", "stat"), 0o755); err != nil {
		return err
	}
	for _, is4 := range []bool{true, false} {
		stat := nodeagent.StatFile(is4)
		b, err := os.ReadFile(filepath.Join("/proc/1/net", stat))
		if err != nil {
			return fmt.Errorf("copying the host's %s: %w", stat, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "net", stat), b, 0o444); err != nil {
			return err
		}
	}
	a.mu.Lock()
	if a.hangable == nil {
		a.hangable = map[string]bool{}
	}
	a.hangable[node] = true
	a.mu.Unlock()
	if !a.Kill(node) {
		return fmt.Errorf("no probe agent runs on node %s", node)
	}
	return nil
}

// Hang makes every later round of node's agent block in its first read (see Hangable).
func (a *ProbeAgents) Hang(node string) error {
	a.mu.Lock()
	ok := a.hangable[node]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("the agent of node %s was not started Hangable", node)
	}
	for _, is4 := range []bool{true, false} {
		path := filepath.Join(a.hangDir(node), "net", nodeagent.StatFile(is4))
		tmp := path + ".fifo"
		if err := syscall.Mkfifo(tmp, 0o444); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// hangCommand is the command running binary with args for node: in a mount namespace of its
// own when node was made Hangable. Called with a.mu held (Reconcile).
func (a *ProbeAgents) hangCommand(node, binary string, args []string) *exec.Cmd {
	if !a.hangable[node] {
		return exec.Command(binary, args...)
	}
	return exec.Command("unshare", append([]string{"--mount", "--propagation", "slave", "--", "sh", "-c", hangScript, "sh",
		a.hangDir(node), binary}, args...)...)
}

// unhang forgets node's Hangable state once its agent was restarted: the kubelet's restart runs
// the agent as before.
func (a *ProbeAgents) unhang(node string) {
	a.mu.Lock()
	hang := a.hangable[node]
	delete(a.hangable, node)
	a.mu.Unlock()
	if hang {
		_ = os.RemoveAll(a.hangDir(node))
	}
}
