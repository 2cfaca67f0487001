package main

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

func TestParsePreflightFlags(t *testing.T) {
	f, err := parsePreflightFlags([]string{"vm1", "-nprod", "--target-selector", "zone=a,rack=r3", "-ojson"})
	if err != nil {
		t.Fatal(err)
	}
	if f.vmi != "vm1" || f.namespace != "prod" || f.output != "json" || !reflect.DeepEqual(f.targetSelector, map[string]string{"zone": "a", "rack": "r3"}) {
		t.Errorf("parsed %+v", f)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing the VMI"},
		{[]string{"a", "b"}, `unexpected argument "b"`},
		{[]string{"Bad_Name"}, `VMI "Bad_Name" is not a valid`},
		{[]string{"vm", "--target-selector", "zone"}, "want KEY=VALUE pairs"},
		{[]string{"vm", "--target-selector", "zone=a,zone=b"}, "given twice"},
		{[]string{"vm", "--target-selector", "-bad=a"}, `label key "-bad"`},
		{[]string{"vm", "-o", "yaml"}, `-o "yaml"`},
		{[]string{"vm", "--request-timeout", "soon"}, "--request-timeout"},
	} {
		if _, err := parsePreflightFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestPreflightExitCodesOnUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := preflightMain(context.Background(), defaultName, []string{"--kubeconfig", "/nonexistent", "vm"}, &out, &errOut); code != preflightError {
		t.Errorf("missing kubeconfig: exit %d, want %d (%s)", code, preflightError, errOut.String())
	}
	if code := preflightMain(context.Background(), defaultName, []string{}, &out, &errOut); code != preflightError {
		t.Errorf("no VMI: exit %d, want %d", code, preflightError)
	}
	out.Reset()
	if code := preflightMain(context.Background(), defaultName, []string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "kubectl migranet preflight") {
		t.Errorf("-h: exit %d, output %q", code, out.String())
	}
}

func TestPreflightTable(t *testing.T) {
	r := preflightReport{Namespace: "ns", VMI: "vm", PreflightResult: &migrationcheck.PreflightResult{
		Admitted: true, Warnings: []string{"migranet feasibleTarget: no node"},
		Rules: []migrationcheck.RuleVerdict{{Rule: settings.RuleKubeVirtReady, Verdict: migrationcheck.VerdictPass},
			{Rule: settings.RuleFeasibleTarget, Verdict: migrationcheck.VerdictWarn, Message: "migranet feasibleTarget: no node"}},
		Nodes: []migrationcheck.NodeVerdict{{Node: "node-1", Reason: "the VMI's current node"}, {Node: "node-2", Fits: true}},
	}}
	var b bytes.Buffer
	if err := r.print(&b, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"would be ADMITTED with 1 warning.", "feasibleTarget  warn     migranet feasibleTarget: no node", "node-1          no       the VMI's current node", "node-2          yes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "PATH") {
		t.Errorf("a path column without path verdicts:\n%s", b.String())
	}
	if strings.Contains(b.String(), "HARVESTER") || strings.Contains(b.String(), "Harvester") {
		t.Errorf("Harvester's column or lines off Harvester (no node carries harvesterOffers):\n%s", b.String())
	}

	// With the paths judged, each target's verdict.
	r.Nodes = []migrationcheck.NodeVerdict{{Node: "node-1", Reason: "is its source node node-1"}, {Node: "node-2", Fits: true, Path: "verified"},
		{Node: "node-3", Fits: true, Path: "failing: 9000-byte frames from node-1 to node-3 do not arrive"}, {Node: "node-4", Fits: true, Path: "unverified: node-4's probe results are stale"}}
	b.Reset()
	if err := r.print(&b, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NODE            TARGET   WHY NOT / PATH FROM THE SOURCE", "node-1          no       is its source node node-1", "node-2          yes      path verified",
		"node-3          yes      path failing: 9000-byte frames from node-1 to node-3 do not arrive", "node-4          yes      path unverified: node-4's probe results are stale"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "INBOUND") {
		t.Errorf("an inbound column without a budget:\n%s", b.String())
	}

	// Under a budget, each target's inbound migrations against its limit; none for a node that is
	// no target.
	r.Nodes = []migrationcheck.NodeVerdict{{Node: "node-1", Reason: "is its source node node-1"}, {Node: "node-2", Fits: true, Path: "verified", Inbound: "1/1 full"},
		{Node: "node-3", Fits: true, Path: "verified", Inbound: "0/1"}}
	b.Reset()
	if err := r.print(&b, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NODE            TARGET   INBOUND   WHY NOT / PATH FROM THE SOURCE", "node-1          no                 is its source node node-1",
		"node-2          yes      1/1 full  path verified", "node-3          yes      0/1       path verified"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
