package monitoring

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// monitoringDir is manifests/monitoring, relative to this package.
const monitoringDir = "../../manifests/monitoring"

// prometheusRule is the part of a PrometheusRule this package reads.
type prometheusRule struct {
	Kind string         `json:"kind"`
	Spec map[string]any `json:"spec"`
}

func readRule(t *testing.T) prometheusRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r prometheusRule
	if err := yaml.Unmarshal(raw, &r); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if r.Kind != "PrometheusRule" || r.Spec["groups"] == nil {
		t.Fatalf("prometheusrule.yaml: kind %q with no spec.groups", r.Kind)
	}
	return r
}

// promtool builds (once; cached outside the work tree) and returns promtool.
func promtool(t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "bash", "../tools/build.sh", "promtool")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("building promtool: %v\n%s", err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// TestAlertRules runs rules_test.yaml with `promtool test rules` against the PrometheusRule's
// groups, after `promtool check rules` on them.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules, err := yaml.Marshal(readRule(t).Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(monitoringDir, "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.CommandContext(context.Background(), bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
