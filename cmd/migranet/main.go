package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `migranet: a dedicated live-migration network for KubeVirt.

Usage:
  migranet manager [flags]   run the controllers and admission webhooks (in-cluster or --kubeconfig)
  migranet dev [flags]       run the manager out of cluster: self-signed webhook certificate,
                             CRD and webhook configuration registered by itself
  migranet validate [flags] FILE...
                             validate Setting objects offline
  migranet status [flags]    show live migrations and the migration network (-w follows changes)
  migranet preflight [flags] VMI
                             what the admission webhook would answer to a migration of VMI,
                             rule by rule and node by node (exit 0 admitted, 1 refused)
  migranet probe [flags]     the probe agent of one node (DaemonSet migranet-probe): proves
                             the migration network's paths to every other node
  migranet version [-o json] this build: version, commit, Go, the versions it is tested with

As a kubectl plugin (this binary on PATH as kubectl-migranet): kubectl migranet <command> ...

Run 'migranet <command> -h' (or 'migranet help <command>') for a command's flags.
`

// main runs the command its arguments name and exits with its status.
func main() { os.Exit(run(commandName(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command args name, writing to stdout and stderr, and returns the exit status:
// help goes to stdout (exit 0), usage errors to stderr (exit 2). name is the command as the user
// typed it (commandName): help and errors name commands that way.
func run(name string, args []string, stdout, stderr io.Writer) int {
	usage := asTyped(name, usage)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "manager":
		return runManager(name, args[1:], stdout, stderr, false)
	case "dev":
		return runManager(name, args[1:], stdout, stderr, true)
	case "validate":
		return runValidate(name, args[1:], stdout, stderr)
	case "status":
		return runStatus(name, args[1:], stdout, stderr)
	case "preflight":
		return runPreflight(name, args[1:], stdout, stderr)
	case "probe":
		return runProbe(name, args[1:], stdout, stderr)
	case "version", "--version":
		return runVersion(name, args[1:], stdout, stderr)
	case "help":
		if len(args) > 1 && args[1] != "help" {
			return run(name, []string{args[1], "-h"}, stdout, stderr) // migranet help COMMAND
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", name, args[0], usage)
		return 2
	}
}
