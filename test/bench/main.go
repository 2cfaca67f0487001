// Command bench is `make bench`: it runs every migranet measure in one process and prints one
// summary line per measure, `bench <name>: ...`, each with its ratio against a baseline measured
// in the same run. Pass measure names as arguments to run only those; BENCH_CPUPROFILE=file
// writes a CPU profile of the run, BENCH_MEMPROFILE=file its allocation profile.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

type measure struct {
	name string
	run  func() ([]string, error)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == clientCommand {
		if err := admissionClient(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == agentCommand {
		if err := probeAgent(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	measures := []measure{
		{"setting-validate", settingValidate},
		{"admission", benchAdmission},
		{"reconcile", reconcile},
		{"probe", benchProbe},
		{"abort", benchAbort},
		{"proxy-stream", benchProxyStream},
		{"drain", benchDrain},
		{"scale-lab", benchScaleLab},
		{"scale-control", benchScaleControl},
	}
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	ctrl.SetLogger(logr.Discard())
	failed := false
	for _, m := range measures {
		if len(os.Args) > 1 && !slices.Contains(os.Args[1:], m.name) {
			continue
		}
		lines, err := m.run()
		for _, l := range lines {
			fmt.Println(l)
		}
		if err != nil {
			fmt.Printf("bench %s: FAILED: %v\n", m.name, err)
			failed = true
		}
	}
	if path := os.Getenv("BENCH_MEMPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if failed {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
