package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/settings"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// silentServer accepts connections on loopback and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

func runS(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := statusMain(ctx, defaultName, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestStatusErrors(t *testing.T) {
	home := isolate(t)
	unreachable := writeKubeconfig(t, t.TempDir(), "https://"+closedPort(t), "")
	silent := writeKubeconfig(t, t.TempDir(), "https://"+silentServer(t), "")
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr []string
	}{
		{name: "bad output", args: []string{"-o", "yaml"}, code: 2, stderr: []string{`-o "yaml": the output format must be one of table, json`, "migranet status -h"}},
		{name: "bad joined output", args: []string{"-owide"}, code: 2, stderr: []string{`-o "wide"`}},
		{name: "two arguments", args: []string{"my-vmim", "other"}, code: 2, stderr: []string{`unexpected argument "other"`, "-n NAMESPACE NAME"}},
		{name: "a name with -A", args: []string{"-A", "my-vmim"}, code: 2, stderr: []string{`a migration name ("my-vmim")`, "not -A or -w"}},
		{name: "a name with -w", args: []string{"-w", "my-vmim"}, code: 2, stderr: []string{`a migration name ("my-vmim")`, "not -A or -w"}},
		{name: "unknown flag", args: []string{"--selector", "a=b"}, code: 2, stderr: []string{"flag provided but not defined: -selector"}},
		{name: "namespace without value", args: []string{"-n"}, code: 2, stderr: []string{"flag needs an argument: -n"}},
		{name: "empty namespace", args: []string{"--namespace="}, code: 2, stderr: []string{"needs a namespace name"}},
		{name: "bad timeout", args: []string{"--request-timeout", "soon"}, code: 2, stderr: []string{`--request-timeout "soon"`}},
		{name: "negative timeout", args: []string{"--request-timeout=-5s"}, code: 2, stderr: []string{"--request-timeout"}},
		{name: "missing kubeconfig file", args: []string{"--kubeconfig", filepath.Join(home, "nope")}, code: 2,
			stderr: []string{"--kubeconfig " + filepath.Join(home, "nope") + ": no such file or directory"}},
		{name: "no configuration anywhere", code: 2, stderr: []string{"no cluster configured: pass --kubeconfig FILE, set $KUBECONFIG, or create ~/.kube/config"}},
		{name: "unknown context", args: []string{"--kubeconfig", unreachable, "--context", "nope"}, code: 2,
			stderr: []string{"--context nope: no such context"}},
		{name: "unreachable", args: []string{"--kubeconfig", unreachable}, code: 1,
			stderr: []string{"cannot reach the API server at https://127.0.0.1:", "--kubeconfig"}},
		{name: "unreachable through KUBECONFIG", env: map[string]string{"KUBECONFIG": unreachable}, code: 1,
			stderr: []string{"cannot reach the API server"}},
		{name: "no answer", args: []string{"--kubeconfig", silent, "--request-timeout", "1"}, code: 1,
			stderr: []string{"no answer from the API server", "within --request-timeout 1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := runS(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tc.code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty:\n%s", stdout)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if n := strings.Count(stderr, "migranet status: "); tc.code != 0 && n != 1 {
				t.Errorf("the error should be reported once, got %d times:\n%s", n, stderr)
			}
		})
	}
}

// TestStatusNodesFlags: --nodes parses with the flags the node view reads (the KubeVirt namespace
// of the inbound limits: a flag never registered once left status blind), and is refused beside a
// migration name or -w, naming both.
func TestStatusNodesFlags(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args    []string
		wantErr string
		kvNS    string
	}{
		{args: []string{"--nodes"}, kvNS: settings.DefaultKubeVirtNamespace},
		{args: []string{"--nodes", "--kubevirt-namespace", "harvester-system", "-o", "json"}, kvNS: "harvester-system"},
		{args: []string{"--nodes", "mig-1"}, wantErr: `--nodes shows every node; a migration name ("mig-1")`},
		{args: []string{"--nodes", "-w"}, wantErr: "--nodes does not watch (-w)"},
	} {
		f, err := parseStatusFlags(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: want an error with %q, got %v", tc.args, tc.wantErr, err)
			}
			continue
		}
		if err != nil || !f.nodes || f.kubevirtNamespace != tc.kvNS {
			t.Errorf("%v: got %+v, %v", tc.args, f, err)
		}
	}
}
