package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migranet/migranet/test/cluster"
	testenv "github.com/migranet/migranet/test/env"
)

// dev is a running `make dev` program.
type dev struct {
	cmd   *exec.Cmd
	state string // DEV_DIR
	bins  *cluster.Binaries
}

// startDev builds and runs the `make dev` program with env added to its environment and waits for
// its ready line.
func startDev(t *testing.T, env ...string) *dev {
	t.Helper()
	bins, err := cluster.BuildBinaries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// What the program builds on its way up (migranet, kept between runs; the CNI plugins) is
	// built here first: the readiness window below is about starting the cluster, and a cold
	// build on a fresh machine took longer than the window alone (CI on record: not ready in 5
	// minutes, beside the other suites' cold builds).
	if _, err := testenv.BuildMigranet(context.Background(), filepath.Join(dir, "warm")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", filepath.Join(cluster.RepoRoot(), "test", "tools", "build.sh"), "cni").CombinedOutput(); err != nil {
		t.Fatalf("test/tools/build.sh cni: %v\n%s", err, out)
	}
	devcluster := filepath.Join(dir, "devcluster")
	build := exec.Command("go", "build", "-o", devcluster, "./test/devcluster")
	build.Dir = cluster.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/devcluster: %v\n%s", err, out)
	}
	d := &dev{cmd: exec.Command(devcluster), state: filepath.Join(dir, "dev"), bins: bins}
	d.cmd.Env = append(append(os.Environ(), "DEV_DIR="+d.state), env...)
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = stderr
	if err := d.cmd.Start(); err != nil {
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
			_ = d.cmd.Wait()
			logs, _ := os.ReadFile(stderr.Name())
			t.Fatalf("devcluster exited before it was ready:\n%s", logs)
		}
	case <-time.After(5 * time.Minute):
		_ = d.cmd.Process.Kill()
		t.Fatal("no 'migranet dev: ready' within 5 minutes")
	}
	return d
}

// kubectl runs the real kubectl with the kubeconfig the program wrote.
func (d *dev) kubectl(args ...string) (string, error) {
	out, err := exec.Command(d.bins.Kubectl, append([]string{"--kubeconfig", filepath.Join(d.state, "kubeconfig")}, args...)...).CombinedOutput()
	return string(out), err
}

// interrupt stops the program as Ctrl-C would and checks that no process it started survives.
func (d *dev) interrupt(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("devcluster exit after Ctrl-C: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Fatal("devcluster did not stop within 60 s of Ctrl-C")
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := processesMentioning(d.state); len(left) > 0; left = processesMentioning(d.state) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left after Ctrl-C: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDevClusterReadyAndCleanStop runs the `make dev` program with two nodes, waits for its ready
// line, uses the kubeconfig it wrote, interrupts it as Ctrl-C would and checks that no process it
// started survives.
func TestDevClusterReadyAndCleanStop(t *testing.T) {
	d := startDev(t, "DEV_NODES=2")
	out, err := d.kubectl("get", "nodes,kubevirt", "-A", "--no-headers")
	if err != nil {
		t.Fatalf("kubectl with the written kubeconfig: %v\n%s", err, out)
	}
	for _, want := range []string{"node-1", "node-2", "kubevirt"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get nodes,kubevirt -A: %q missing from\n%s", want, out)
		}
	}
	started := processesMentioning(d.state)
	if len(started) < 5 {
		t.Errorf("expected etcd, apiserver, controller-manager, scheduler, kwok and migranet under %s, found %d: %v", d.state, len(started), started)
	}
	d.interrupt(t)
}

// TestDevClusterOnSimulatedNetworksBlamesNothing runs `make dev` the way a machine that cannot make
// network namespaces does (DEV_NODE_NETWORKS=simulated), sets the README's first value and reads
// the setting's Healthy condition: the paths are "not measured on simulated networks", and no
// probe agent is blamed for it. The fault it catches: the status of a fallback cluster telling a
// newcomer to check an agent that never runs there.
func TestDevClusterOnSimulatedNetworksBlamesNothing(t *testing.T) {
	d := startDev(t, "DEV_NODES=2", "DEV_NODE_NETWORKS=simulated", "DEV_KUBEVIRT=simulated")
	defer d.interrupt(t)
	value := `{"clusterNetwork":"` + cluster.DefaultClusterNetwork + `","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
	if out, err := d.kubectl("patch", "settings.migranet.io", "vm-migration-network", "--type=merge", "-p", `{"value":`+strconv.Quote(value)+`}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	var msg string
	_ = wait.PollUntilContextTimeout(context.Background(), time.Second, 90*time.Second, true, func(context.Context) (bool, error) {
		msg, _ = d.kubectl("get", "settings.migranet.io", "vm-migration-network", "-o", `jsonpath={.status.conditions[?(@.type=="Healthy")].message}`)
		return strings.Contains(msg, "not measured on simulated networks"), nil
	})
	if !strings.Contains(msg, "not measured on simulated networks") {
		t.Fatalf("Healthy's message %q does not say the paths are not measured on simulated networks", msg)
	}
	if strings.Contains(msg, "agent") {
		t.Errorf("Healthy's message %q blames an agent that does not run on simulated networks", msg)
	}
	ready, _ := d.kubectl("get", "settings.migranet.io", "vm-migration-network", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	if ready != "True" {
		t.Errorf("Ready = %q on simulated networks, want True (the simulators attach every node)", ready)
	}
	t.Logf("Healthy on simulated networks: %s", msg)
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
