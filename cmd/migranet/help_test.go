package main

import (
	"bytes"
	"strings"
	"testing"
)

// commands are migranet's subcommands, each with the start of its usage.
var commands = map[string]string{
	"manager":   "Usage: migranet manager",
	"dev":       "Usage: migranet dev",
	"validate":  "Usage: migranet validate",
	"status":    "Usage: migranet status",
	"preflight": "Usage: migranet preflight",
}

// runMain runs migranet with args and returns its exit status, stdout and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(defaultName, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestHelpOnStdout checks that every way of asking for help prints the usage on stdout, nothing
// on stderr, and exits 0.
func TestHelpOnStdout(t *testing.T) {
	type ask struct {
		args []string
		want []string // substrings of stdout
	}
	overview := []string{"Usage:\n  migranet manager", "migranet preflight [flags] VMI"}
	asks := []ask{{[]string{"help"}, overview}, {[]string{"-h"}, overview}, {[]string{"--help"}, overview}}
	for cmd, usage := range commands {
		want := []string{usage, "Flags:\n"}
		for _, h := range []string{"-h", "-help", "--help"} {
			asks = append(asks, ask{[]string{cmd, h}, want})
		}
		asks = append(asks, ask{[]string{"help", cmd}, want})
	}
	for _, a := range asks {
		t.Run(strings.Join(a.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(a.args...)
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr:\n%s", code, stderr)
			}
			for _, w := range a.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestUsageErrorsOnStderr checks that a bad flag, an unknown command or no command at all is
// reported on stderr only, once, with exit status 2.
func TestUsageErrorsOnStderr(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"no command":      {nil, "Usage:\n  migranet manager"},
		"unknown command": {[]string{"frobnicate"}, `unknown command "frobnicate"`},
		"help of unknown": {[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
	}
	for cmd := range commands {
		tests[cmd+" bad flag"] = struct {
			args []string
			want string
		}{[]string{cmd, "--frobnicate"}, "migranet " + cmd + ": flag provided but not defined: -frobnicate"}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runMain(tc.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, want 2; stdout:\n%s", code, stdout)
			}
			if strings.Count(stderr, tc.want) != 1 {
				t.Errorf("stderr should hold %q once:\n%s", tc.want, stderr)
			}
		})
	}
}
