package results

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// A stream as go1.26's `go test -json` writes it: one package with a pass, a skip with its
// reason and a failing subtest; one without test files; one whose build failed.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"    ok_test.go:9: noise of a passing test\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOK","Elapsed":0.01}
{"Action":"run","Package":"ex/a","Test":"TestNetns"}
{"Action":"output","Package":"ex/a","Test":"TestNetns","Output":"    env_test.go:56: opted out: MIGRANET_TEST_SKIP=qemu\n"}
{"Action":"skip","Package":"ex/a","Test":"TestNetns","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestT"}
{"Action":"run","Package":"ex/a","Test":"TestT/row"}
{"Action":"output","Package":"ex/a","Test":"TestT/row","Output":"    t_test.go:3: got 2, want 3\n"}
{"Action":"fail","Package":"ex/a","Test":"TestT/row","Elapsed":0}
{"Action":"fail","Package":"ex/a","Test":"TestT","Elapsed":0}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"fail","Package":"ex/a","Elapsed":1.5}
{"Action":"start","Package":"ex/b"}
{"Action":"output","Package":"ex/b","Output":"?   \tex/b\t[no test files]\n"}
{"Action":"skip","Package":"ex/b","Elapsed":0}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-output","Output":"c.go:1: syntax error\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-fail"}
{"Action":"start","Package":"ex/c"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c","Elapsed":0,"FailedBuild":"ex/c [ex/c.test]"}
`

// The fault it catches: a stream printer that loses a failure's reason, shows passing tests'
// noise, hides skip reasons, or miscounts.
func TestStreamPrintsWhatGoTestWouldAndCounts(t *testing.T) {
	var raw, out bytes.Buffer
	c, err := Stream(strings.NewReader(stream), &raw, &out)
	if err != nil {
		t.Fatal(err)
	}
	if raw.String() != stream {
		t.Errorf("raw copy differs from the input:\n%s", raw.String())
	}
	got := out.String()
	for _, want := range []string{
		"got 2, want 3",                      // the failure's reason
		"opted out: MIGRANET_TEST_SKIP=qemu", // the skip's reason
		"FAIL ex/a 1.5s (1 passed, 2 failed, 1 skipped)",
		"?    ex/b [no test files]",
		"c.go:1: syntax error",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise of a passing test") {
		t.Errorf("output shows a passing test's log:\n%s", got)
	}
	s := c.Suites()
	if len(s) != 3 {
		t.Fatalf("suites = %d, want 3 (ex/a, ex/b, ex/c)", len(s))
	}
	a := s[0]
	if a.Passed != 1 || a.Failed != 2 || a.Skipped != 1 || a.Outcome != "FAIL" || a.Seconds != 1.5 {
		t.Errorf("ex/a = %+v", a)
	}
	if s[1].Outcome != "no tests" || s[1].Red() {
		t.Errorf("ex/b = %+v, want no tests and not red", s[1])
	}
	if !s[2].Red() {
		t.Errorf("ex/c (build failed) = %+v, want red", s[2])
	}
}

func TestSummarize(t *testing.T) {
	green := &Suite{Package: "ex/g", Kind: "tests", Passed: 3, Outcome: "ok", Seconds: 2}
	skipping := &Suite{Package: "ex/q", Kind: "tests", Passed: 1, Skipped: 1, SkippedNames: []string{"TestQEMU"}, Outcome: "ok"}
	for _, tc := range []struct {
		name    string
		suites  []*Suite
		optOut  string
		wantErr string // "" for a green run
		wantOut []string
	}{
		{name: "all green", suites: []*Suite{green}, wantOut: []string{"ex/g", "total"}},
		{name: "a skip without the opt-out is red", suites: []*Suite{green, skipping}, wantErr: "1 skipped without the opt-out",
			wantOut: []string{"ex/q: TestQEMU"}},
		{name: "a skip with the opt-out is listed and green", suites: []*Suite{green, skipping}, optOut: "qemu",
			wantOut: []string{`MIGRANET_TEST_SKIP="qemu"`, "ex/q: TestQEMU"}},
		{name: "a failure is red even with the opt-out, and says why", optOut: "qemu",
			suites:  []*Suite{{Package: "ex/f", Kind: "specs", Passed: 1, Failed: 1, Outcome: "FAIL", Failures: []string{"it breaks [failed] at f_test.go:3\n      Expected <error>: nil"}}},
			wantErr: "ex/f: FAIL", wantOut: []string{"failed:\n  ex/f: it breaks [failed] at f_test.go:3\n      Expected <error>: nil"}},
		{name: "a package without a verdict is red",
			suites: []*Suite{{Package: "ex/k", Kind: "tests", Passed: 4}}, wantErr: "ex/k: no verdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Summarize(tc.suites, tc.optOut, "", &out)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want green", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// The fault it catches: a Ginkgo suite counted as its one Go test, a skipped spec counted as
// passed, a failed BeforeSuite not counted, or a report matched to the wrong package.
func TestGinkgoReportReplacesTheGoTestCounts(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module ex.test/m\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	suiteDir := filepath.Join(root, "test", "integration")
	results := filepath.Join(root, "results")
	for _, d := range []string{suiteDir, results} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(DirVar, results)
	SaveGinkgo(types.Report{SuitePath: suiteDir, SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, State: types.SpecStatePassed},
		{LeafNodeType: types.NodeTypeIt, State: types.SpecStatePassed},
		{LeafNodeType: types.NodeTypeIt, State: types.SpecStateSkipped, LeafNodeText: "needs a thing"},
		{LeafNodeType: types.NodeTypeIt, State: types.SpecStateTimedout, LeafNodeText: "slow one",
			Failure: types.Failure{Message: "line 1\nline 2", Location: types.CodeLocation{FileName: "/x/slow_test.go", LineNumber: 7}}},
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "no cluster"}},
		// The near miss: a spec that passed after a flaky attempt still carries a failure.
		{LeafNodeType: types.NodeTypeIt, State: types.SpecStatePassed, LeafNodeText: "flaked once", Failure: types.Failure{Message: "first attempt"}},
		{LeafNodeType: types.NodeTypeAfterSuite, State: types.SpecStatePassed},
	}})
	goStream := `{"Action":"run","Package":"ex.test/m/test/integration","Test":"TestIntegration"}
{"Action":"fail","Package":"ex.test/m/test/integration","Test":"TestIntegration","Elapsed":9}
{"Action":"fail","Package":"ex.test/m/test/integration","Elapsed":9.5}
`
	if err := os.WriteFile(filepath.Join(results, "integration.json"), []byte(goStream), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(results)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Suites()
	if len(s) != 1 {
		t.Fatalf("suites = %+v, want the one package", s)
	}
	got := *s[0]
	wantFailures := []string{"slow one [timedout] at /x/slow_test.go:7\n      line 1\n      line 2", "BeforeSuite [failed] at :0\n      no cluster"}
	if !slices.Equal(got.Failures, wantFailures) {
		t.Errorf("failures = %q, want %q", got.Failures, wantFailures)
	}
	// Skipped counts the one skipped spec of the report written above (the fixture's), not a
	// test of this package that skips: nothing here is skipped.
	if got.Kind != "specs" || got.Passed != 3 || got.Failed != 2 || got.Skipped != 1 || got.Seconds != 9.5 || got.Outcome != "FAIL" {
		t.Errorf("suite = %+v, want specs 3 passed, 2 failed (timed out + BeforeSuite), 1 skipped, 9.5 s, FAIL", got)
	}
}

func TestSaveGinkgoWithoutTheVariableWritesNothing(t *testing.T) {
	t.Setenv(DirVar, "")
	dir := t.TempDir()
	t.Chdir(dir)
	SaveGinkgo(types.Report{SuitePath: dir})
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %d files with %s unset", len(entries), DirVar)
	}

}

func TestOptedOut(t *testing.T) {
	for _, tc := range []struct {
		value, suite string
		want         bool
	}{
		{"qemu", "qemu", true},
		{" qemu , other", "qemu", true},
		{"qemu2", "qemu", false},
		{"", "qemu", false},
	} {
		if got := OptedOut(tc.value, tc.suite); got != tc.want {
			t.Errorf("OptedOut(%q, %q) = %v, want %v", tc.value, tc.suite, got, tc.want)
		}
	}
	if _, ok := Prerequisite("qemu"); !ok {
		t.Error(`Prerequisite("qemu") unknown`)
	}
	if _, ok := Prerequisite("nope"); ok {
		t.Error(`Prerequisite("nope") known`)
	}
}

// The fault it catches: two releases' runs of one upstream package merged into one row, or a
// stream converted after the run (package time 0) shown as taking no time.
func TestLoadKeepsReleasesApartAndTimesConvertedStreams(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := `{"Action":"run","Package":"kv/api","Test":"TestA"}
{"Action":"pass","Package":"kv/api","Test":"TestA","Elapsed":2.5}
{"Action":"pass","Package":"kv/api","Test":"TestA/sub","Elapsed":2}
{"Action":"pass","Package":"kv/api","Test":"TestB","Elapsed":1}
{"Action":"pass","Package":"kv/api","Elapsed":0.001}
`
	write("vendor-patches--upstream-v1.8.4-api.json", one)
	write("vendor-patches--upstream-v1.9.0-api.json", one)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Suites()
	if len(s) != 2 || s[0].Package != "kv/api (v1.8.4)" || s[1].Package != "kv/api (v1.9.0)" {
		t.Fatalf("suites = %+v, want kv/api (v1.8.4) and kv/api (v1.9.0)", s)
	}
	if s[0].Seconds != 3.5 || s[0].Passed != 3 {
		t.Errorf("suite = %+v, want 3 passed in 3.5 s (top-level tests only)", s[0])
	}
}

// The fault it catches: a Ginkgo suite of migranet's that saved no spec report (its start-up
// lost results.SaveGinkgo) counted green as its one Go test, or upstream's Ginkgo suites (the
// vendor-patches harness runs KubeVirt's, which save none) turned red.
func TestGinkgoSuiteWithoutSpecReportIsRed(t *testing.T) {
	dir := t.TempDir()
	var stream strings.Builder
	for _, pkg := range []string{"ex.test/m/test/s", "kubevirt.io/kubevirt/pkg/p"} {
		fmt.Fprintf(&stream, `{"Action":"run","Package":%[1]q,"Test":"TestSuite"}
{"Action":"output","Package":%[1]q,"Test":"TestSuite","Output":"Running Suite: a suite - /src/s\n"}
{"Action":"pass","Package":%[1]q,"Test":"TestSuite","Elapsed":3}
{"Action":"pass","Package":%[1]q,"Elapsed":3.5}
`, pkg)
	}
	if err := os.WriteFile(filepath.Join(dir, "integration.json"), []byte(stream.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Summarize(c.Suites(), "", "ex.test/m/", &out)
	if err == nil || !strings.Contains(err.Error(), "ex.test/m/test/s: no spec report") {
		t.Errorf("err = %v, want red for test/s's missing spec report\n%s", err, out.String())
	}
	if err != nil && strings.Contains(err.Error(), "kubevirt.io") {
		t.Errorf("err = %v: upstream's suite is not migranet's", err)
	}
	if !strings.Contains(out.String(), "no spec report") {
		t.Errorf("table lacks the row's verdict:\n%s", out.String())
	}
}
