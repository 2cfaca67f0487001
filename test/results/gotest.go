package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Event is one line of `go test -json` (cmd/test2json's TestEvent).
type Event struct {
	Time        time.Time `json:",omitempty"`
	Action      string
	Package     string  `json:",omitempty"`
	ImportPath  string  `json:",omitempty"`
	Test        string  `json:",omitempty"`
	Elapsed     float64 `json:",omitempty"`
	Output      string  `json:",omitempty"`
	FailedBuild string  `json:",omitempty"`
}

// Suite is what one package ran.
type Suite struct {
	Package string
	// Kind is "tests" for Go tests and "specs" once a Ginkgo report replaced the counts.
	Kind string
	// Ginkgo: the package's output shows a Ginkgo suite ran (its "Running Suite:" banner).
	Ginkgo                  bool
	Passed, Failed, Skipped int
	SkippedNames            []string
	// Failures holds, for each failed spec of a Ginkgo report, its name, where it failed and
	// the first lines of why: the end of a CI log must say why it is red.
	Failures []string
	Seconds  float64
	// Outcome is the package's own verdict: "ok", "FAIL", "no tests" or "" while running.
	Outcome string
	// topSeconds sums the top-level tests' own times: a stream converted after the run (the
	// vendor-patches harness) carries no package time of its own.
	topSeconds float64
}

// ginkgoHeader starts the banner Ginkgo prints before a suite's first spec (but with -succinct).
const ginkgoHeader = "Running Suite: "

// Run is the number of tests or specs that ran to a verdict other than skipped.
func (s *Suite) Run() int { return s.Passed + s.Failed }

// Red reports whether the package failed, counting a package that never reported a verdict
// (killed, build failure) as failed.
func (s *Suite) Red() bool { return s.Failed > 0 || s.Outcome == "FAIL" || s.Outcome == "" }

// Collector turns events into suites, one per package, in the order packages first appear.
type Collector struct {
	order  []string
	suites map[string]*Suite
}

// NewCollector returns an empty collector.
func NewCollector() *Collector { return &Collector{suites: map[string]*Suite{}} }

// Add accounts for one event and returns the package's suite.
func (c *Collector) Add(e Event) *Suite {
	pkg := e.Package
	if pkg == "" {
		pkg, _, _ = strings.Cut(e.ImportPath, " [") // "ex/c [ex/c.test]": the test variant of ex/c
	}
	s := c.suites[pkg]
	if s == nil {
		s = &Suite{Package: pkg, Kind: "tests"}
		c.suites[pkg] = s
		c.order = append(c.order, pkg)
	}
	switch {
	case e.Action == "build-fail":
		s.Outcome = "FAIL"
	case e.Action == "output":
		s.Ginkgo = s.Ginkgo || strings.Contains(e.Output, ginkgoHeader)
	case e.Test == "" && e.Action == "pass":
		s.Outcome, s.Seconds = "ok", max(e.Elapsed, s.topSeconds)
	case e.Test == "" && e.Action == "fail":
		s.Outcome, s.Seconds = "FAIL", max(e.Elapsed, s.topSeconds)
	case e.Test == "" && e.Action == "skip":
		s.Outcome = "no tests"
	case e.Action == "pass":
		s.Passed++
		s.addTop(e)
	case e.Action == "fail":
		s.Failed++
		s.addTop(e)
	case e.Action == "skip":
		s.Skipped++
		s.SkippedNames = append(s.SkippedNames, e.Test)
	}
	return s
}

func (s *Suite) addTop(e Event) {
	if !strings.Contains(e.Test, "/") {
		s.topSeconds += e.Elapsed
	}
}

// Suites returns every package seen, in order of first appearance.
func (c *Collector) Suites() []*Suite {
	out := make([]*Suite, 0, len(c.order))
	for _, p := range c.order {
		out = append(out, c.suites[p])
	}
	return out
}

// ReadEvents feeds every JSON line of r to c, packages named as they are.
func ReadEvents(r io.Reader, c *Collector) error { return ReadEventsAs(r, c, "") }

// ReadEventsAs is ReadEvents with suffix appended to every package name (two releases' tests of
// one package stay two rows). Lines that are not JSON events (a test binary
// writing straight to the terminal) are ignored; a malformed stream is an error naming the line.
func ReadEventsAs(r io.Reader, c *Collector, suffix string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !strings.HasPrefix(string(line), "{") {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("line %d: not a go test -json event: %w", n, err)
		}
		if suffix != "" && e.Package != "" {
			e.Package += suffix
		}
		c.Add(e)
	}
	return sc.Err()
}
