package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/certs"
)

// kubevirtMetrics are the KubeVirt v1.8.4 metrics the dashboard reads, as named in
// pkg/monitoring/metrics/virt-controller (migration_metrics.go, migrationstats_collector.go,
// vmistats_collector.go) and pkg/monitoring/metrics/virt-handler/migrationdomainstats.
var kubevirtMetrics = []string{
	"kubevirt_vmi_migration_phase_transition_time_from_creation_seconds",
	"kubevirt_vmi_migrations_in_pending_phase", "kubevirt_vmi_migrations_in_scheduling_phase",
	"kubevirt_vmi_migrations_in_running_phase", "kubevirt_vmi_migrations_in_unset_phase",
	"kubevirt_vmi_migration_succeeded", "kubevirt_vmi_migration_failed",
	"kubevirt_vmi_migration_start_time_seconds", "kubevirt_vmi_migration_end_time_seconds",
	"kubevirt_vmi_migration_data_bytes_total", "kubevirt_vmi_migration_data_remaining_bytes",
	"kubevirt_vmi_migration_data_processed_bytes", "kubevirt_vmi_migration_dirty_memory_rate_bytes",
	"kubevirt_vmi_migration_memory_transfer_rate_bytes",
}

// proxyMetrics are the patched virt-handler's migration proxy metrics (vendor-patches 0003); the
// test checks the patch series still defines them.
var proxyMetrics = []string{
	"kubevirt_vmi_migration_proxy_transferred_bytes_total",
	"kubevirt_vmi_migration_proxy_throughput_bytes_per_second",
}

// recorder is a Registerer that keeps the name of every metric registered with it.
type recorder struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return true }

// exported collects the metric names migranet's code registers, the way the manager does.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	r := &recorder{names: map[string]bool{}}
	if _, err := statuswrite.NewMetrics(r); err != nil {
		t.Fatal(err)
	}
	if _, err := netcontroller.NewMetrics(r); err != nil {
		t.Fatal(err)
	}
	if _, err := webhook.NewMetrics(r); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeagent.NewMetrics(r); err != nil {
		t.Fatal(err)
	}
	r.MustRegister((&certs.Rotator{}).ExpiryCollector())
	if len(r.names) < 8 {
		t.Fatalf("only %d metric names collected from the code: %v", len(r.names), r.names)
	}
	return r.names
}

// metricRef matches the metric names a query can mention: migranet's and KubeVirt's.
var metricRef = regexp.MustCompile(`\b(?:migranet|kubevirt)_[a-zA-Z0-9_]+`)

// queries returns every PromQL expression of the dashboard and the alerts, by where it is.
func queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "migranet-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("migranet-dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			out["dashboard panel "+p.Title+" target "+string(rune('A'+i))] = tg.Expr
		}
	}
	groups, _ := readRule(t).Spec["groups"].([]any)
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for i, r := range rules {
			rule := r.(map[string]any)
			expr, _ := rule["expr"].(string)
			out["alert "+stringOf(rule["alert"])+" #"+string(rune('0'+i))] = expr
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d queries found", len(out))
	}
	return out
}

func stringOf(v any) string { s, _ := v.(string); return s }

// TestQueriesNameExportedMetrics fails when a dashboard panel or an alert queries a metric that
// neither migranet's code registers nor KubeVirt or the patched virt-handler is documented to
// export: a renamed metric breaks this test, not the dashboard.
func TestQueriesNameExportedMetrics(t *testing.T) {
	known := exported(t)
	for _, n := range append(slices.Clone(kubevirtMetrics), proxyMetrics...) {
		known[n] = true
	}
	used := map[string]bool{}
	for where, expr := range queries(t) {
		refs := metricRef.FindAllString(expr, -1)
		if len(refs) == 0 {
			t.Errorf("%s names no metric: %q", where, expr)
		}
		for _, name := range refs {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && known[b] {
					base = b
				}
			}
			used[base] = true
			if !known[base] {
				t.Errorf("%s queries %s, which nothing exports", where, name)
			}
		}
	}
	// Every migranet metric is on the dashboard.
	for name := range exported(t) {
		if !used[name] {
			t.Errorf("the code exports %s, which no panel or alert shows", name)
		}
	}
}

// TestProxyMetricsInPatches: the proxy metric names are the ones the patch series defines
// (Name: "..." or Name: metricPrefix + "..." with metricPrefix = "...").
func TestProxyMetricsInPatches(t *testing.T) {
	patches, err := filepath.Glob("../../vendor-patches/kubevirt-v*/*.patch")
	if err != nil || len(patches) == 0 {
		t.Fatalf("no patches found under vendor-patches/kubevirt-v*: %v", err)
	}
	prefixRe := regexp.MustCompile(`metricPrefix\s*=\s*"([^"]+)"`)
	nameRe := regexp.MustCompile(`Name:\s*(metricPrefix \+ )?"([^"]+)"`)
	for _, p := range patches {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		prefix := ""
		if m := prefixRe.FindSubmatch(raw); m != nil {
			prefix = string(m[1])
		}
		defined := map[string]bool{}
		for _, m := range nameRe.FindAllSubmatch(raw, -1) {
			name := string(m[2])
			if len(m[1]) > 0 {
				name = prefix + name
			}
			defined[name] = true
		}
		if !strings.Contains(filepath.Base(p), "metrics") {
			continue
		}
		for _, n := range proxyMetrics {
			if !defined[n] {
				t.Errorf("%s does not define %q (it defines %v)", p, n, defined)
			}
		}
	}
}
