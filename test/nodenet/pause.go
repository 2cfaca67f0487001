package nodenet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Pause is a pod sandbox's process, as the container runtime's pause container is: it sleeps in
// the sandbox's network namespace, in a cgroup named after the pod the way the kubelet's cgroupfs
// driver names it (<root>/kubepods/pod<uid>). A process of the pod is how migranet's probe agent
// (hostPID) finds the pod's network namespace: /proc/<pid>/cgroup names the pod, /proc/<pid>/ns/net
// is its namespace.
type Pause struct {
	cmd    *exec.Cmd
	cgroup string
}

// CgroupRoot is the writable cgroup v2 hierarchy (the unified mount: /sys/fs/cgroup on a pure
// v2 host, /sys/fs/cgroup/unified on a hybrid one), or an error naming what is missing.
func CgroupRoot() (string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted (a pod sandbox's process needs one to be named after its pod)")
}

// StartPause starts the pause process of pod uid in namespace n, in the cgroup
// <root>/<scope>/kubepods/pod<uid>; scope keeps one environment's cgroups apart.
func StartPause(n NS, root, scope, uid string) (*Pause, error) {
	dir := filepath.Join(root, scope, "kubepods", "pod"+uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the pod's cgroup: %w", err)
	}
	cmd := exec.Command("ip", "netns", "exec", string(n), "sleep", "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	p := &Pause{cmd: cmd, cgroup: dir}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		p.Stop()
		return nil, fmt.Errorf("moving the pause process into %s: %w", dir, err)
	}
	go func() { _ = cmd.Wait() }()
	// ip netns exec enters the namespace, then execs sleep: wait until the process is in it, as
	// a sandbox's process always is.
	self, _ := os.Readlink("/proc/self/ns/net")
	for range 200 {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)); err == nil && ns != self {
			return p, nil
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10_000_000}, nil)
	}
	p.Stop()
	return nil, fmt.Errorf("the pause process never entered namespace %s", n)
}

// Stop kills the process and removes its cgroup.
func (p *Pause) Stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	for range 100 { // rmdir succeeds once the killed process has left the cgroup
		if err := os.Remove(p.cgroup); err == nil || os.IsNotExist(err) {
			return
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10_000_000}, nil)
	}
}

// RemoveCgroups removes the scope's cgroups left behind (their processes gone).
func RemoveCgroups(root, scope string) {
	base := filepath.Join(root, scope)
	pods, _ := filepath.Glob(filepath.Join(base, "kubepods", "pod*"))
	for _, p := range pods {
		_ = os.Remove(p)
	}
	_ = os.Remove(filepath.Join(base, "kubepods"))
	_ = os.Remove(base)
}
