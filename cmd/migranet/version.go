package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// releaseVersion and releaseCommit are the release this binary was built as and its commit
// (`make build` sets them with -ldflags "-X main.releaseVersion=... -X main.releaseCommit=...",
// from git describe and git rev-parse); empty, they are the Go toolchain's record of the module
// (a tag, or a pseudo-version) and of the VCS revision, when it kept one.
var releaseVersion, releaseCommit string

// Tested with: the versions the suites run (test/tools/build.sh) and the API the binary is built
// against (go.mod); docs/install.md's skew table says what each means.
const (
	testedKubernetes  = "v1.34.4"
	testedKubeVirt    = "v1.8.4 (virt-api, virt-controller, virtctl)"
	builtAgainstAPI   = "kubevirt.io/api v1.9.0"
	metricBuildInfo   = "migranet_build_info"
	buildInfoHelpText = "migranet's build: version, commit and Go version as labels; always 1."
)

// buildInfo is what `migranet version` prints.
type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Modified   bool   `json:"modified,omitempty"`
	GoVersion  string `json:"goVersion"`
	Kubernetes string `json:"testedKubernetes"`
	KubeVirt   string `json:"testedKubeVirt"`
	API        string `json:"builtAgainst"`
}

// readBuildInfo reads the binary's build: releaseVersion when set, else the toolchain's record.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: releaseVersion, Commit: "unknown", GoVersion: "unknown", Kubernetes: testedKubernetes, KubeVirt: testedKubeVirt, API: builtAgainstAPI}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "unknown"
		}
		if releaseCommit != "" {
			b.Commit = releaseCommit
		}
		return b
	}
	b.GoVersion = bi.GoVersion
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if releaseCommit != "" {
		b.Commit = releaseCommit
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	return b
}

// version is the one-word version the manager logs and the probe agent reports: the version,
// and the first 12 hex of the commit when the version does not already name it.
func version() string {
	b := readBuildInfo()
	v := b.Version
	if len(b.Commit) >= 12 && !strings.Contains(v, b.Commit[:12]) {
		v += "+" + b.Commit[:12]
	}
	if b.Modified {
		v += "-dirty"
	}
	return v
}

// buildInfoCollector is the migranet_build_info gauge.
func buildInfoCollector() prometheus.Collector {
	b := readBuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricBuildInfo, Help: buildInfoHelpText,
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion}})
	g.Set(1)
	return g
}

// runVersion is `migranet version`.
func runVersion(name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("o", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s version: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	b := readBuildInfo()
	switch *output {
	case "json":
		out, _ := json.MarshalIndent(b, "", "  ")
		fmt.Fprintln(stdout, string(out))
	case "text":
		modified := ""
		if b.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(stdout, "migranet %s\ncommit: %s%s\ngo: %s\ntested with: Kubernetes %s; KubeVirt %s; built against %s\n",
			b.Version, b.Commit, modified, b.GoVersion, b.Kubernetes, b.KubeVirt, b.API)
	default:
		fmt.Fprintf(stderr, "%s version: -o %q: want text or json\n", name, *output)
		return 2
	}
	return 0
}
