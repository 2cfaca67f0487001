package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestCommandName: the fault it catches is a plugin not recognised as one (kubectl's path to the
// binary, krew's symlink, windows' .exe and backslashes) or another name taken for the plugin's
// (a near miss: kubectl-migranet-old, kubectl itself, a renamed migranet).
func TestCommandName(t *testing.T) {
	for arg0, want := range map[string]string{
		"/root/.krew/bin/kubectl-migranet":          "kubectl migranet",
		"kubectl-migranet":                          "kubectl migranet",
		`C:\Users\a\.krew\bin\kubectl-migranet.exe`: "kubectl migranet",
		"/usr/local/bin/migranet":                   "migranet",
		"./bin/migranet":                            "migranet",
		"/tmp/go-build123/b001/exe/migranet":        "migranet",
		"/usr/local/bin/kubectl-migranet-old":       "migranet",
		"/usr/local/bin/kubectl":                    "migranet",
		"migranet.exe":                              "migranet",
		"":                                          "migranet",
	} {
		if got := commandName(arg0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", arg0, got, want)
		}
	}
}

// TestAsTyped: the fault it catches is a rewrite that misses a command line (a subcommand, the
// "migranet:" prefix, 'migranet help <command>'), touches prose or other names (migranet's,
// migranet-probe, migranet.io, "migranet Setting"), or doubles a "kubectl migranet" already there.
func TestAsTyped(t *testing.T) {
	for in, want := range map[string]string{
		"Usage: migranet status [--kubeconfig FILE]":                                "Usage: kubectl migranet status [--kubeconfig FILE]",
		"Run 'migranet <command> -h' (or 'migranet help <command>')":                "Run 'kubectl migranet <command> -h' (or 'kubectl migranet help <command>')",
		"migranet: unknown command":                                                 "kubectl migranet: unknown command",
		"e.g. migranet preflight -n NAMESPACE VMI":                                  "e.g. kubectl migranet preflight -n NAMESPACE VMI",
		"As a kubectl plugin: kubectl migranet preflight VMI.":                      "As a kubectl plugin: kubectl migranet preflight VMI.",
		"what migranet's admission webhook would answer":                            "what migranet's admission webhook would answer",
		"Validates migranet Setting objects; DaemonSet migranet-probe; migranet.io": "Validates migranet Setting objects; DaemonSet migranet-probe; migranet.io",
		"is the migranet manager running? migranet statuses":                        "is the kubectl migranet manager running? migranet statuses",
	} {
		if got := asTyped("kubectl migranet", in); got != want {
			t.Errorf("asTyped(%q)\n got %q\nwant %q", in, got, want)
		}
		if got := asTyped(defaultName, in); got != in {
			t.Errorf("asTyped(migranet, %q) changed it to %q", in, got)
		}
	}
}

// TestHelpAndErrorsNameThePlugin: run as kubectl's plugin, every help and usage error names the
// command as `kubectl migranet ...`, and run as migranet, never so. The fault it catches is a
// text that still says "migranet status" to a user who typed "kubectl migranet status" (or says
// "kubectl migranet" to one who typed migranet).
func TestHelpAndErrorsNameThePlugin(t *testing.T) {
	type ask struct {
		args []string
		out  func(stdout, stderr string) string // the text that names the command
		want string                             // as the plugin; as migranet: without "kubectl "
	}
	stdout := func(o, _ string) string { return o }
	stderr := func(_, e string) string { return e }
	asks := []ask{
		{[]string{"help"}, stdout, "Usage:\n  kubectl migranet manager"},
		{[]string{"--help"}, stdout, "Run 'kubectl migranet <command> -h' (or 'kubectl migranet help <command>')"},
		{nil, stderr, "  kubectl migranet status [flags]"},
		{[]string{"frobnicate"}, stderr, `kubectl migranet: unknown command "frobnicate"`},
		{[]string{"preflight"}, stderr, "kubectl migranet preflight: missing the VMI: name the VirtualMachineInstance to migrate, e.g. kubectl migranet preflight -n NAMESPACE VMI\nRun 'kubectl migranet preflight -h'"},
		{[]string{"status", "my-vmim", "extra"}, stderr, "kubectl migranet status: unexpected argument \"extra\": status takes at most one migration name (kubectl migranet status -n NAMESPACE NAME)"},
		{[]string{"validate"}, stderr, "kubectl migranet validate: no FILE given\nUsage: kubectl migranet validate"},
		{[]string{"version", "x"}, stderr, `kubectl migranet version: unexpected argument "x"`},
		{[]string{"probe", "--port=-1", "--node=x"}, stderr, "kubectl migranet probe: "},
		{[]string{"manager", "--frobnicate"}, stderr, "kubectl migranet manager: flag provided but not defined: -frobnicate\nRun 'kubectl migranet manager -h'"},
	}
	for cmd, usage := range commands {
		asks = append(asks, ask{[]string{"help", cmd}, stdout, strings.Replace(usage, "migranet", "kubectl migranet", 1)})
	}
	for _, a := range asks {
		t.Run(strings.Join(a.args, " "), func(t *testing.T) {
			var o, e strings.Builder
			run("kubectl migranet", a.args, &o, &e)
			if got := a.out(o.String(), e.String()); !strings.Contains(got, a.want) {
				t.Errorf("as kubectl migranet: output lacks %q:\n%s", a.want, got)
			}
			o.Reset()
			e.Reset()
			run(defaultName, a.args, &o, &e)
			got := a.out(o.String(), e.String())
			if want := strings.ReplaceAll(a.want, "kubectl migranet", "migranet"); !strings.Contains(got, want) {
				t.Errorf("as migranet: output lacks %q:\n%s", want, got)
			}
			// As migranet, "kubectl migranet" appears only where the usage explains the plugin.
			if n := len(regexp.MustCompile(`kubectl migranet`).FindAllString(got, -1)); n > 1 {
				t.Errorf("as migranet: output names kubectl migranet %d times:\n%s", n, got)
			}
		})
	}
}
