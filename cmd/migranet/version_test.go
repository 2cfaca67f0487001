package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestVersion: what `migranet version`, the manager's log, the probe agent's reports and the
// build-info metric say come from one build record, the release's when set. Faults caught, each
// seen to fail once: the ldflags release version ignored; the metric's version label not the
// command's; a bad -o accepted.
func TestVersion(t *testing.T) {
	releaseVersion, releaseCommit = "v0.1.0", "0123456789abcdef0123456789abcdef01234567"
	defer func() { releaseVersion, releaseCommit = "", "" }()
	var out, errb bytes.Buffer
	if rc := runVersion(defaultName, nil, &out, &errb); rc != 0 || !strings.HasPrefix(out.String(), "migranet v0.1.0\ncommit: 0123456789abcdef") ||
		!strings.Contains(out.String(), "tested with: Kubernetes v1.34.4; KubeVirt v1.8.4") {
		t.Fatalf("rc %d, stdout %q, stderr %q", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := runVersion(defaultName, []string{"-o", "json"}, &out, &errb); rc != 0 {
		t.Fatalf("-o json: rc %d: %s", rc, errb.String())
	}
	var b buildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Version != "v0.1.0" || b.Commit != releaseCommit || b.API != "kubevirt.io/api v1.9.0" {
		t.Fatalf("json %q: %+v, %v", out.String(), b, err)
	}
	if got := version(); got != "v0.1.0+0123456789ab" {
		t.Errorf("version() = %q", got)
	}
	if rc := runVersion(defaultName, []string{"-o", "yaml"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "want text or json") {
		t.Errorf("-o yaml: rc %d, stderr %q", rc, errb.String())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfoCollector())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(mfs))
	}
	labels := map[string]string{}
	for _, l := range mfs[0].Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["version"] != "v0.1.0" || labels["commit"] != releaseCommit || mfs[0].Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("metric labels %v value %v", labels, mfs[0].Metric[0].GetGauge().GetValue())
	}
	if n := testutil.CollectAndCount(buildInfoCollector()); n != 1 {
		t.Errorf("%d series, want 1", n)
	}
}
