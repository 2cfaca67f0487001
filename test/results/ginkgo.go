package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

const ginkgoPrefix = "ginkgo--"

// SaveGinkgo writes a Ginkgo suite's report into $MIGRANET_TEST_RESULTS, named after the
// suite's package, so the summary counts its specs rather than its one Go test. It does nothing
// when the variable is unset. Register it with ReportAfterSuite.
func SaveGinkgo(r types.Report) {
	dir := os.Getenv(DirVar)
	if dir == "" {
		return
	}
	pkg, err := ImportPath(r.SuitePath)
	if err == nil {
		err = reporters.GenerateJSONReport(r, filepath.Join(dir, ginkgoPrefix+url.PathEscape(pkg)+".json"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "results: spec report of %s not saved: %v\n", r.SuitePath, err)
	}
}

// ImportPath finds the module holding dir and returns dir's import path.
func ImportPath(dir string) (string, error) {
	for root := dir; ; root = filepath.Dir(root) {
		mod, err := modulePath(filepath.Join(root, "go.mod"))
		if err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil || rel == "." {
				return mod, err
			}
			return mod + "/" + filepath.ToSlash(rel), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(root) == root {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// ApplyGinkgo replaces the Go-test counts of the report's package in c with its specs.
func ApplyGinkgo(path string, c *Collector) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	pkg, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), ginkgoPrefix), ".json"))
	if err != nil {
		return fmt.Errorf("%s: not a spec report name: %w", path, err)
	}
	for _, r := range reports {
		s := c.Add(Event{Package: pkg})
		s.Kind, s.Passed, s.Failed, s.Skipped, s.SkippedNames, s.Failures = "specs", 0, 0, 0, nil, nil
		for _, sr := range r.SpecReports {
			if sr.State.Is(types.SpecStateFailureStates) {
				s.Failures = append(s.Failures, failure(sr))
			}
			if sr.LeafNodeType != types.NodeTypeIt {
				if sr.State.Is(types.SpecStateFailureStates) {
					s.Failed++ // a failed BeforeSuite or AfterSuite
				}
				continue
			}
			switch {
			case sr.State.Is(types.SpecStateFailureStates):
				s.Failed++
			case sr.State == types.SpecStatePassed:
				s.Passed++
			default: // skipped or pending
				s.Skipped++
				s.SkippedNames = append(s.SkippedNames, sr.FullText())
			}
		}
	}
	return nil
}

// failureLines bounds how much of a failure's message the summary repeats.
const failureLines = 12

// failure is one failed spec in a few lines: its name (or its node's kind for a suite-level
// node), where it failed, and the start of its message.
func failure(sr types.SpecReport) string {
	name := sr.FullText()
	if name == "" {
		name = sr.LeafNodeType.String()
	}
	lines := strings.Split(strings.TrimSpace(sr.Failure.Message), "\n")
	if len(lines) > failureLines {
		lines = append(lines[:failureLines], fmt.Sprintf("[%d more lines in the suite's output]", len(lines)-failureLines))
	}
	return fmt.Sprintf("%s [%s] at %s\n      %s", name, sr.State, sr.Failure.Location, strings.Join(lines, "\n      "))
}
