package drainplan

import (
	"strings"
	"testing"
)

// exposition is what virt-handler v1.9.0 serves (and a Prometheus server's /federate passes
// on, timestamps added), with the patched proxy's series and an unrelated one.
const exposition = `# HELP kubevirt_vmi_dirty_rate_bytes_per_second Guest dirty-rate in bytes per second.
# TYPE kubevirt_vmi_dirty_rate_bytes_per_second gauge
kubevirt_vmi_dirty_rate_bytes_per_second{name="db-0",namespace="prod",node="node-1"} 8.388608e+06 1764300000000
kubevirt_vmi_dirty_rate_bytes_per_second{name="idle",namespace="prod",node="node-1"} 0
# TYPE kubevirt_vmi_migration_dirty_memory_rate_bytes gauge
kubevirt_vmi_migration_dirty_memory_rate_bytes{name="web",namespace="prod",node="node-2"} 1.048576e+06
# TYPE kubevirt_vmi_migration_memory_transfer_rate_bytes gauge
kubevirt_vmi_migration_memory_transfer_rate_bytes{name="web",namespace="prod",node="node-2"} 3.3554432e+07
# TYPE kubevirt_vmi_migration_data_processed_bytes gauge
kubevirt_vmi_migration_data_processed_bytes{name="web",namespace="prod",node="node-2"} 1.34217728e+08
# TYPE kubevirt_vmi_migration_data_remaining_bytes gauge
kubevirt_vmi_migration_data_remaining_bytes{name="web",namespace="prod",node="node-2"} 6.7108864e+07
# TYPE kubevirt_vmi_migration_proxy_throughput_bytes_per_second gauge
kubevirt_vmi_migration_proxy_throughput_bytes_per_second{direction="to_target",port_key="49152",side="source",uid="u-1"} 2.097152e+07
kubevirt_vmi_migration_proxy_throughput_bytes_per_second{direction="to_target",port_key="49152",side="target",uid="u-1"} 9
kubevirt_vmi_migration_proxy_throughput_bytes_per_second{direction="to_target",port_key="libvirt",side="source",uid="u-1"} 9
# TYPE kubevirt_vmi_memory_resident_bytes gauge
kubevirt_vmi_memory_resident_bytes{name="db-0",namespace="prod",node="node-1"} 1e+09
`

func TestMetrics(t *testing.T) {
	m := NewMetrics("http://prometheus/federate")
	kept, err := m.Parse(strings.NewReader(exposition))
	if err != nil || kept != 7 {
		t.Fatalf("Parse kept %d, %v; want the 7 samples of the metrics read (the proxy's of the source's memory stream only)", kept, err)
	}
	for _, tc := range []struct {
		key  string
		want int64
		from string
	}{
		{"prod/db-0", 8 << 20, MetricDirtyRate + " from http://prometheus/federate"},
		// The near miss: a guest measured dirtying nothing is reported, not missing.
		{"prod/idle", 0, MetricDirtyRate},
		{"prod/web", 1 << 20, MetricMigrationDirty + " (its migration in flight)"},
		{"prod/gone", 0, "not reported by http://prometheus/federate"},
	} {
		got, from := m.Dirty(tc.key)
		if got != tc.want || !strings.HasPrefix(from, tc.from) {
			t.Errorf("Dirty(%s) = %d (%s), want %d (%s...)", tc.key, got, from, tc.want, tc.from)
		}
	}
	if rate, done, left, from, ok := m.Streaming("prod/web", "u-0"); !ok || rate != 32<<20 || done != 128<<20 || left != 64<<20 || !strings.HasPrefix(from, MetricMigrationTransfer) {
		t.Errorf("Streaming(web) = %d %d %d %q %v", rate, done, left, from, ok)
	}
	if rate, _, _, from, ok := m.Streaming("prod/other", "u-1"); !ok || rate != 20<<20 || !strings.HasPrefix(from, MetricProxyThroughput) {
		t.Errorf("Streaming by the proxy's uid = %d %q %v", rate, from, ok)
	}
	if _, err := NewMetrics("x").Parse(strings.NewReader("not metrics {")); err == nil {
		t.Error("a body that is no exposition parsed")
	}
	var none *Metrics
	if d, from := none.Dirty("prod/db-0"); d != 0 || !strings.HasPrefix(from, "not reported (no metrics read)") {
		t.Errorf("nil metrics: %d %q", d, from)
	}
}
