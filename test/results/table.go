package results

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// Load reads every `*.json` go test stream and every Ginkgo report in dir.
func Load(dir string) (*Collector, error) {
	c := NewCollector()
	streams, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(streams)
	var reports []string
	for _, p := range streams {
		if strings.HasPrefix(filepath.Base(p), ginkgoPrefix) {
			reports = append(reports, p)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		err = ReadEventsAs(f, c, releaseOf(filepath.Base(p)))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	for _, p := range reports {
		if err := ApplyGinkgo(p, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Summarize prints one row per suite that has tests and a total, then says why the run is red:
// a failure, a package without a verdict, a Ginkgo suite of migranet's without its spec report,
// or a skip while optOut (MIGRANET_TEST_SKIP) is empty.
// It returns an error naming each reason, nil for a green run. Package paths lose trim, the
// module's own prefix.
func Summarize(suites []*Suite, optOut, trim string, out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "suite\tcounts\trun\tpassed\tfailed\tskipped\tseconds\tverdict\t")
	var total Suite
	var reasons, skipped, failures []string
	for _, s := range suites {
		if s.Outcome == "no tests" {
			continue
		}
		verdict := s.Outcome
		noReport := noSpecReport(s, trim)
		switch {
		case verdict == "":
			verdict = "no verdict"
		case noReport && verdict == "ok":
			verdict = "no spec report"
		case noReport:
			verdict += ", no spec report"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%s\t\n", strings.TrimPrefix(s.Package, trim), s.Kind, s.Run(), s.Passed, s.Failed, s.Skipped, s.Seconds, verdict)
		total.Passed += s.Passed
		total.Failed += s.Failed
		total.Skipped += s.Skipped
		total.Seconds += s.Seconds
		if s.Red() || noReport {
			reasons = append(reasons, fmt.Sprintf("%s: %s", s.Package, verdict))
		}
		for _, f := range s.Failures {
			failures = append(failures, strings.TrimPrefix(s.Package, trim)+": "+f)
		}
		for _, n := range s.SkippedNames {
			skipped = append(skipped, s.Package+": "+n)
		}
	}
	fmt.Fprintf(w, "total\t\t%d\t%d\t%d\t%d\t%.1f\t\t\n", total.Run(), total.Passed, total.Failed, total.Skipped, total.Seconds)
	if err := w.Flush(); err != nil {
		return err
	}
	if len(failures) > 0 {
		fmt.Fprintf(out, "failed:\n  %s\n", strings.Join(failures, "\n  "))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(out, "skipped (%s=%q):\n  %s\n", OptOutVar, optOut, strings.Join(skipped, "\n  "))
		if strings.TrimSpace(optOut) == "" {
			reasons = append(reasons, fmt.Sprintf("%d skipped without the opt-out: a missing prerequisite must fail, or set %s to the suite's name", len(skipped), OptOutVar))
		}
	}
	if len(reasons) > 0 {
		return fmt.Errorf("make test is red:\n  %s", strings.Join(reasons, "\n  "))
	}
	return nil
}

// noSpecReport reports whether s is one of migranet's Ginkgo suites (a package under test/ whose
// output shows Ginkgo ran) that saved no spec report (results.SaveGinkgo, which
// framework.RunSuite registers): its specs were counted as one Go test. Upstream's Ginkgo suites
// (the vendor-patches harness runs KubeVirt's) save none.
func noSpecReport(s *Suite, trim string) bool {
	return s.Ginkgo && s.Kind != "specs" && strings.HasPrefix(s.Package, trim+"test/")
}

// releaseOf is " (v1.9.0)" for the vendor-patches streams of upstream's tests of one KubeVirt
// release ("vendor-patches--upstream-v1.9.0-api.json"), "" for any other stream.
func releaseOf(file string) string {
	rest, ok := strings.CutPrefix(file, "vendor-patches--upstream-")
	if !ok {
		return ""
	}
	version, _, ok := strings.Cut(rest, "-")
	if !ok {
		return ""
	}
	return " (" + version + ")"
}
