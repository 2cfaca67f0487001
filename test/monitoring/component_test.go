package monitoring

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migranet/migranet/test/cluster"
)

// TestComponentRenders renders manifests/monitoring as a component of a kustomization with
// kubectl kustomize: the PrometheusRule, the ServiceMonitor and the dashboard's ConfigMap come
// out, labelled for Grafana's sidecar; the default kustomization does not include it.
func TestComponentRenders(t *testing.T) {
	bins, err := cluster.BuildBinaries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(monitoringDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, abs) // kustomize refuses absolute roots
	if err != nil {
		t.Fatal(err)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n- " + rel + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bins.Kubectl, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	for _, want := range []string{"kind: PrometheusRule", "kind: ServiceMonitor", "kind: ConfigMap", "name: migranet-grafana-dashboard",
		"grafana_dashboard: \"1\"", "migranet-dashboard.json: |", "alert: MigranetNetworkNotReady"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the rendered component lacks %q", want)
		}
	}
	def, err := os.ReadFile("../../manifests/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(def), "monitoring") {
		t.Error("manifests/kustomization.yaml includes the monitoring component; it is optional")
	}
}
