package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/migranet/migranet/test/cluster"
)

// TestDevClusterReadyAndCleanStop runs the `make dev` program with two nodes, waits for its ready
// line, uses the kubeconfig it wrote, interrupts it as Ctrl-C would and checks that no process it
// started survives.
func TestDevClusterReadyAndCleanStop(t *testing.T) {
	bins, err := cluster.BuildBinaries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	devcluster := filepath.Join(dir, "devcluster")
	build := exec.Command("go", "build", "-o", devcluster, "./test/devcluster")
	build.Dir = cluster.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/devcluster: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "dev")
	cmd := exec.Command(devcluster)
	cmd.Env = append(os.Environ(), "DEV_DIR="+state, "DEV_NODES=2")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "migranet dev: ready") {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			logs, _ := os.ReadFile(stderr.Name())
			t.Fatalf("devcluster exited before it was ready:\n%s", logs)
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("no 'migranet dev: ready' within 5 minutes")
	}

	out, err := exec.Command(bins.Kubectl, "--kubeconfig", filepath.Join(state, "kubeconfig"),
		"get", "nodes,kubevirt", "-A", "--no-headers").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl with the written kubeconfig: %v\n%s", err, out)
	}
	for _, want := range []string{"node-1", "node-2", "kubevirt"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl get nodes,kubevirt -A: %q missing from\n%s", want, out)
		}
	}
	started := processesMentioning(state)
	if len(started) < 5 {
		t.Errorf("expected etcd, apiserver, controller-manager, scheduler, kwok and migranet under %s, found %d: %v", state, len(started), started)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("devcluster exit after Ctrl-C: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("devcluster did not stop within 60 s of Ctrl-C")
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := processesMentioning(state); len(left) > 0; left = processesMentioning(state) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left after Ctrl-C: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// processesMentioning lists the command lines of running processes that name path.
func processesMentioning(path string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(raw), "\x00", " ")
		if strings.Contains(line, path) {
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}
