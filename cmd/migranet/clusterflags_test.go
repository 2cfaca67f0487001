package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/settings"
)

// isolate keeps the test away from the machine's own kubeconfig and in-cluster configuration.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return home
}

// writeKubeconfig writes a kubeconfig whose current context "main" points at server with
// namespace ns ("" for none); context "other" has namespace "other-ns".
func writeKubeconfig(t *testing.T, dir, server, ns string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	nsLine := ""
	if ns != "" {
		nsLine = "\n    namespace: " + ns
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: main
  context:
    cluster: c
    user: u%s
- name: other
  context: {cluster: c, user: u, namespace: other-ns}
current-context: main
`, server, nsLine)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterCommands parse the arguments of each command that takes the cluster flags and return
// those flags; preflight gets the VMI it requires in front.
var clusterCommands = map[string]func(args []string) (*clusterFlags, error){
	"status": func(args []string) (*clusterFlags, error) {
		f, err := parseStatusFlags(args)
		if err != nil {
			return nil, err
		}
		return &f.clusterFlags, nil
	},
	"preflight": func(args []string) (*clusterFlags, error) {
		f, err := parsePreflightFlags(append([]string{"vm"}, args...))
		if err != nil {
			return nil, err
		}
		return &f.clusterFlags, nil
	},
}

// TestClusterNamespace checks, for every command with the cluster flags, which namespace it works
// in, the way kubectl picks it: -A (status only), then -n, then the context's namespace, else
// default.
func TestClusterNamespace(t *testing.T) {
	isolate(t)
	withNS := writeKubeconfig(t, t.TempDir(), "https://127.0.0.1:1", "team-a")
	withoutNS := writeKubeconfig(t, t.TempDir(), "https://127.0.0.1:1", "")
	tests := []struct {
		name    string
		args    []string
		env     string // KUBECONFIG
		want    string
		timeout time.Duration
		allOnly bool // -A: status lists all namespaces, preflight has no such flag
	}{
		{name: "context namespace", args: []string{"--kubeconfig", withNS}, want: "team-a"},
		{name: "no context namespace", args: []string{"--kubeconfig", withoutNS}, want: "default"},
		{name: "from KUBECONFIG", env: withNS, want: "team-a"},
		{name: "-n wins", args: []string{"--kubeconfig", withNS, "-n", "b"}, want: "b"},
		{name: "joined -n", args: []string{"--kubeconfig", withNS, "-nb"}, want: "b"},
		{name: "--namespace=", args: []string{"--kubeconfig", withNS, "--namespace=c"}, want: "c"},
		{name: "-n over no context namespace", args: []string{"--kubeconfig", withoutNS, "-n", "d"}, want: "d"},
		{name: "other context", args: []string{"--kubeconfig", withNS, "--context", "other"}, want: "other-ns"},
		{name: "request timeout", args: []string{"--kubeconfig", withNS, "--request-timeout", "5"}, want: "team-a", timeout: 5 * time.Second},
		{name: "-A wins over -n", args: []string{"--kubeconfig", withNS, "-n", "b", "-A"}, want: "", allOnly: true},
		{name: "--all-namespaces", args: []string{"--kubeconfig", withNS, "--all-namespaces"}, want: "", allOnly: true},
	}
	for cmd, parse := range clusterCommands {
		for _, tc := range tests {
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				if tc.env != "" {
					t.Setenv("KUBECONFIG", tc.env)
				}
				f, err := parse(tc.args)
				if tc.allOnly && cmd != "status" {
					if err == nil || !strings.Contains(err.Error(), "flag provided but not defined") {
						t.Fatalf("%s accepted %q (err %v)", cmd, tc.args, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				cfg, ns, err := f.load("migranet-" + cmd)
				if err != nil {
					t.Fatal(err)
				}
				if ns != tc.want {
					t.Errorf("namespace %q, want %q", ns, tc.want)
				}
				if cfg.Host != "https://127.0.0.1:1" || cfg.UserAgent != "migranet-"+cmd || cfg.Timeout != tc.timeout {
					t.Errorf("host %q, user agent %q, timeout %v", cfg.Host, cfg.UserAgent, cfg.Timeout)
				}
			})
		}
	}
}

// TestClusterLoadErrors checks that every command with the cluster flags explains a kubeconfig it
// cannot use in the same words, once, with the usage exit code.
func TestClusterLoadErrors(t *testing.T) {
	home := isolate(t)
	kubeconfig := writeKubeconfig(t, t.TempDir(), "https://127.0.0.1:1", "")
	mains := map[string]func(args []string) (int, string){
		"status": func(args []string) (int, string) {
			var out, errOut bytes.Buffer
			return statusMain(context.Background(), defaultName, args, &out, &errOut), errOut.String()
		},
		"preflight": func(args []string) (int, string) {
			var out, errOut bytes.Buffer
			return preflightMain(context.Background(), defaultName, append(args, "vm"), &out, &errOut), errOut.String()
		},
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing kubeconfig file", []string{"--kubeconfig", filepath.Join(home, "nope")}, "--kubeconfig " + filepath.Join(home, "nope") + ": no such file or directory"},
		{"no configuration anywhere", nil, "no cluster configured: pass --kubeconfig FILE, set $KUBECONFIG, or create ~/.kube/config"},
		{"unknown context", []string{"--kubeconfig", kubeconfig, "--context", "nope"}, "--context nope: no such context in the kubeconfig (kubectl config get-contexts lists them)"},
	}
	for cmd, main := range mains {
		for _, tc := range tests {
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				code, stderr := main(tc.args)
				if code != 2 {
					t.Errorf("exit %d, want 2", code)
				}
				if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "migranet "+cmd+": ") != 1 {
					t.Errorf("stderr should say %q once:\n%s", tc.want, stderr)
				}
			})
		}
	}
}

// TestClusterFlagsDocumented checks that status and preflight document every flag they register,
// the shared ones (--kubevirt-namespace among them) in the very same lines.
func TestClusterFlagsDocumented(t *testing.T) {
	_, statusFS := newStatusFlags()
	_, preflightFS := newPreflightFlags()
	for name, c := range map[string]struct {
		fs    *flag.FlagSet
		usage string
	}{"status": {statusFS, statusUsage}, "preflight": {preflightFS, preflightUsage}} {
		c.fs.VisitAll(func(fl *flag.Flag) {
			spelled := "--" + fl.Name
			if len(fl.Name) == 1 {
				spelled = "-" + fl.Name + ","
			}
			if !strings.Contains(c.usage, spelled) {
				t.Errorf("%s registers %s but its usage does not document it:\n%s", name, spelled, c.usage)
			}
		})
		for _, d := range []flagDoc{docKubeconfig, docContext, docRequestTimeout} {
			if !strings.Contains(c.usage, formatFlags(d)) {
				t.Errorf("%s usage lacks the shared lines\n%s", name, formatFlags(d))
			}
		}
	}
	for name, usage := range map[string]string{"status": statusUsage, "preflight": preflightUsage} {
		if !strings.Contains(usage, formatFlags(docKubeVirtNS)) {
			t.Errorf("%s usage lacks --kubevirt-namespace's shared lines\n%s", name, formatFlags(docKubeVirtNS))
		}
	}
}

// TestParseRequestTimeout checks kubectl's spellings of --request-timeout.
func TestParseRequestTimeout(t *testing.T) {
	good := map[string]time.Duration{"0": 0, "5": 5 * time.Second, "30s": 30 * time.Second, "1m": time.Minute, "250ms": 250 * time.Millisecond}
	for in, want := range good {
		if got, err := parseRequestTimeout(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-1", "-2s", "1.5"} {
		if _, err := parseRequestTimeout(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// subcommands are the commands run dispatches on (the case labels of its switch in main.go), read
// from the source so that a command added there is checked here without anyone listing it.
func subcommands(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if ok && fn.Name.Name != "run" {
			return false
		}
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if name, _ := strconv.Unquote(lit.Value); !strings.HasPrefix(name, "-") && name != "help" {
					out = append(out, name)
				}
			}
		}
		return true
	})
	return out
}

// TestEveryClusterCommandTakesKubeVirtNamespace checks that every subcommand that takes
// --kubeconfig (it reads a cluster) also takes --kubevirt-namespace: without it the network in
// force is looked up without its namespace and every path reads "unverified" (issue 53: status
// registered none). Each command is asked for help with the flag in front: a flag it does not
// register fails the parse (exit 2) before -h is seen. Near miss: a made-up flag fails the same way.
func TestEveryClusterCommandTakesKubeVirtNamespace(t *testing.T) {
	isolate(t)
	cmds := subcommands(t)
	for _, want := range []string{"status", "preflight", "manager", "dev", "probe", "validate", "version"} {
		if !slices.Contains(cmds, want) {
			t.Fatalf("subcommands read from main.go %v lack %q: the parse of run's switch is broken", cmds, want)
		}
	}
	clusterCommands := 0
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			if code, _, _ := runMain(cmd, "--kubeconfig", "none", "-h"); code != 0 {
				return // reads no cluster (validate, version)
			}
			clusterCommands++
			if code, _, stderr := runMain(cmd, "--"+kubevirtNamespaceFlag, "kv", "-h"); code != 0 {
				t.Errorf("migranet %s takes --kubeconfig but not --%s (exit %d): %s", cmd, kubevirtNamespaceFlag, code, stderr)
			}
			if code, _, _ := runMain(cmd, "--kubevirt-namespaces", "kv", "-h"); code != 2 {
				t.Errorf("near miss: migranet %s accepted a flag it does not define (exit %d)", cmd, code)
			}
		})
	}
	if clusterCommands < 5 {
		t.Errorf("only %d commands take --kubeconfig; status, preflight, manager, dev and probe do", clusterCommands)
	}
	// The commands whose options are at hand: the flag's default is settings' in each.
	f, statusFS := newStatusFlags()
	pf, preflightFS := newPreflightFlags()
	_, managerFS, _ := parseManagerFlags(nil, false)
	_, probeFS, _ := parseProbeFlags(nil)
	for name, fs := range map[string]*flag.FlagSet{"status": statusFS, "preflight": preflightFS, "manager": managerFS, "probe": probeFS} {
		if fl := fs.Lookup(kubevirtNamespaceFlag); fl == nil || fl.DefValue != settings.DefaultKubeVirtNamespace {
			t.Errorf("%s: --%s %+v, want default %q", name, kubevirtNamespaceFlag, fl, settings.DefaultKubeVirtNamespace)
		}
	}
	if f.kubevirtNamespace != settings.DefaultKubeVirtNamespace || pf.kubevirtNamespace != settings.DefaultKubeVirtNamespace {
		t.Errorf("status reads %q, preflight %q before any flag; want %q", f.kubevirtNamespace, pf.kubevirtNamespace, settings.DefaultKubeVirtNamespace)
	}
}
