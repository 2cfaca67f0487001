// Command scccheck admits the pod templates of migranet's rendered manifests as OpenShift's SCC
// admission would, with OpenShift's own matching code (github.com/openshift/apiserver-library-go,
// pkg/securitycontextconstraints/sccmatching), and says which SecurityContextConstraints admits each.
//
//	scccheck -sccs DIR -manifests FILE -expect KIND/NAMESPACE/NAME=SCC ...
//
// DIR holds the SCCs and OpenShift's own RBAC grants of them (test/tools/openshift/sccs); FILE is
// the rendered manifests (a YAML stream), whose Roles, ClusterRoles and bindings are the RBAC that
// may grant more SCCs to a workload's service account. Each -expect names a Deployment or DaemonSet
// and the SCC that must admit its pod. Exit status 0: every expectation held; 1: one did not (each
// failure on stderr); 2: bad usage or input.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

type expectations map[string]string

func (e expectations) String() string { return fmt.Sprint(map[string]string(e)) }

func (e expectations) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.Count(k, "/") != 2 || v == "" {
		return fmt.Errorf("want KIND/NAMESPACE/NAME=SCC, e.g. Deployment/migranet-system/migranet=restricted-v2, got %q", s)
	}
	e[k] = v
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scccheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sccDir := fs.String("sccs", "", "directory of the SCCs and OpenShift's RBAC grants of them (YAML)")
	manifests := fs.String("manifests", "", "the rendered manifests (YAML stream)")
	expect := expectations{}
	fs.Var(expect, "expect", "KIND/NAMESPACE/NAME=SCC: the workload's pod must be admitted by that SCC (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *sccDir == "" || *manifests == "" || len(expect) == 0 {
		fmt.Fprintln(stderr, "scccheck: -sccs, -manifests and at least one -expect are required")
		return 2
	}
	in, err := load(*sccDir, *manifests)
	if err != nil {
		fmt.Fprintln(stderr, "scccheck:", err)
		return 2
	}
	failed := false
	for key, want := range expect {
		w, ok := in.workloads[key]
		if !ok {
			fmt.Fprintf(stderr, "FAIL %s: no such workload in %s\n", key, *manifests)
			failed = true
			continue
		}
		res, err := admit(in, w)
		if err != nil {
			fmt.Fprintf(stderr, "FAIL %s: %v\n", key, err)
			failed = true
			continue
		}
		if msg := res.judge(want); msg != "" {
			fmt.Fprintf(stderr, "FAIL %s: %s\n", key, msg)
			failed = true
			continue
		}
		assigned := strings.Join(res.assigned, ", ")
		if assigned == "" {
			assigned = "nothing"
		}
		fmt.Fprintf(stdout, "ok %s: admitted by %s, unchanged but for %s\n", key, res.scc, assigned)
	}
	if failed {
		return 1
	}
	return 0
}
