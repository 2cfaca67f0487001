package nodenet_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migranet/migranet/test/nodenet"
)

// TestStuckPluginIsKilled: a plugin run that does not end (a whereabouts waiting for ever, as
// v0.9.2 can when it loses its lease right after winning it) fails at Plugins.Timeout, and the
// process it started (its IPAM plugin, holding the output pipes) is killed with it; the near
// miss, a plugin that answers in time, succeeds.
// Catches: a plugin run without a deadline (the lab's Multus then attaches no further pod, seen
// in CI as a virt-handler Pending for the whole of a spec), a kill of the plugin alone (the IPAM
// plugin lives on, and kept Wait waiting for its pipes).
func TestStuckPluginIsKilled(t *testing.T) {
	ctx := context.Background()
	host := nodenet.NS(fmt.Sprintf("mnstuck%d", os.Getpid()%100000))
	if err := nodenet.AddNS(ctx, host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodenet.DelNS(context.Background(), host) })
	bin := t.TempDir()
	childPID := filepath.Join(bin, "child.pid")
	stuck := "#!/bin/sh\nsleep 300 &\necho $! > " + childPID + "\nwait\n"
	answers := "#!/bin/sh\ncat > /dev/null\necho '{\"cniVersion\":\"1.0.0\"}'\n"
	for name, script := range map[string]string{"stuck": stuck, "answers": answers} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = 500 * time.Millisecond
	p := &nodenet.Plugins{BinDir: bin, ConfDir: t.TempDir(), Timeout: timeout}
	req := func(typ string) nodenet.Request {
		return nodenet.Request{Command: "ADD", Host: host, Sandbox: host, ContainerID: "c-stuck", IfName: "migration0",
			PodNamespace: "kubevirt", PodName: "stuck", PodUID: "uid-stuck", NetworkName: "kubevirt/" + typ,
			Config: `{"cniVersion":"1.0.0","name":"` + typ + `","type":"` + typ + `"}`}
	}

	if _, err := p.Run(ctx, req("answers")); err != nil {
		t.Fatalf("a plugin that answers in time: %v", err)
	}

	began := time.Now()
	done := make(chan error, 1)
	go func() { _, err := p.Run(ctx, req("stuck")); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within "+timeout.String()) {
			t.Fatalf("a stuck plugin: %v, want its timeout named", err)
		}
		if took := time.Since(began); took > timeout+2*time.Second {
			t.Errorf("a stuck plugin's run ended %s after it began (timeout %s)", took, timeout)
		}
	case <-time.After(timeout + 10*time.Second):
		t.Fatalf("a stuck plugin's run has not ended 10 s past its timeout of %s", timeout)
	}
	b, err := os.ReadFile(childPID)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// A pidfd turns readable when its process ends.
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 2000); err != nil || n == 0 {
		t.Fatalf("the process the stuck plugin started (pid %d) still runs 2 s after the run failed (%v)", pid, err)
	}
}
