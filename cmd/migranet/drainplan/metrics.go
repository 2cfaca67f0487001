package drainplan

import (
	"fmt"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The metrics KubeVirt's virt-handler reports (v1.9.0, pkg/monitoring/metrics/virt-handler),
// labelled namespace, name and node, that the plan and the progress read; and the patched
// migration proxy's (vendor-patches 0003), labelled uid (the VMI's), side, direction, port_key.
const (
	MetricDirtyRate         = "kubevirt_vmi_dirty_rate_bytes_per_second"       // domain stats, any running VMI
	MetricMigrationDirty    = "kubevirt_vmi_migration_dirty_memory_rate_bytes" // while it migrates
	MetricMigrationTransfer = "kubevirt_vmi_migration_memory_transfer_rate_bytes"
	MetricMigrationDone     = "kubevirt_vmi_migration_data_processed_bytes"
	MetricMigrationLeft     = "kubevirt_vmi_migration_data_remaining_bytes"
	MetricProxyThroughput   = "kubevirt_vmi_migration_proxy_throughput_bytes_per_second"
)

// Metrics holds the samples the plan reads, by VMI (namespace/name) or, for the proxy's, by the
// VMI's UID; and From, where they were read.
type Metrics struct {
	From string
	// Sources is how many sources answered (virt-handlers, or the URL).
	Sources  int
	dirty    map[string]float64
	migDirty map[string]float64
	transfer map[string]float64
	done     map[string]float64
	left     map[string]float64
	proxy    map[string]float64
}

// NewMetrics returns an empty set read from from.
func NewMetrics(from string) *Metrics {
	return &Metrics{From: from, dirty: map[string]float64{}, migDirty: map[string]float64{}, transfer: map[string]float64{},
		done: map[string]float64{}, left: map[string]float64{}, proxy: map[string]float64{}}
}

// Parse adds the samples of one exposition in Prometheus' text format (virt-handler's /metrics,
// a Prometheus server's /federate) and returns how many it kept.
func (m *Metrics) Parse(r io.Reader) (int, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, err
	}
	kept := 0
	for name, fam := range fams {
		var into map[string]float64
		switch name {
		case MetricDirtyRate:
			into = m.dirty
		case MetricMigrationDirty:
			into = m.migDirty
		case MetricMigrationTransfer:
			into = m.transfer
		case MetricMigrationDone:
			into = m.done
		case MetricMigrationLeft:
			into = m.left
		case MetricProxyThroughput:
			into = m.proxy
		default:
			continue
		}
		for _, s := range fam.GetMetric() {
			l := labels(s)
			key := l["namespace"] + "/" + l["name"]
			if name == MetricProxyThroughput {
				if l["side"] != "source" || l["direction"] != "to_target" || l["port_key"] != "49152" {
					continue
				}
				key = l["uid"]
			}
			into[key] = value(s)
			kept++
		}
	}
	return kept, nil
}

func labels(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	}
	return 0
}

// Dirty is the dirty rate KubeVirt reports for VMI namespace/name, and what it read: the domain
// stats' rate, else the rate of a migration in flight. 0 and "not reported ..." when neither.
func (m *Metrics) Dirty(key string) (int64, string) {
	if m == nil {
		return 0, "not reported (no metrics read): assumed 0, so the time is a lower bound"
	}
	if v, ok := m.dirty[key]; ok {
		return int64(v), MetricDirtyRate + " from " + m.From
	}
	if v, ok := m.migDirty[key]; ok {
		return int64(v), MetricMigrationDirty + " (its migration in flight) from " + m.From
	}
	return 0, "not reported by " + m.From + ": assumed 0, so the time is a lower bound"
}

// Streaming is what KubeVirt reports of VMI key's migration in flight (its UID uid): the
// transfer rate (virt-handler's, else the patched proxy's) and the bytes done and left; ok false
// when nothing.
func (m *Metrics) Streaming(key, uid string) (rate, done, left int64, from string, ok bool) {
	if m == nil {
		return 0, 0, 0, "", false
	}
	if v, found := m.transfer[key]; found {
		rate, from, ok = int64(v), MetricMigrationTransfer, true
	} else if v, found := m.proxy[uid]; found {
		rate, from, ok = int64(v), MetricProxyThroughput, true
	}
	if v, found := m.done[key]; found {
		done, ok = int64(v), true
	}
	if v, found := m.left[key]; found {
		left, ok = int64(v), true
	}
	return rate, done, left, strings.TrimSpace(from + " from " + m.From), ok
}

// Describe says what was read, for the plan's footer.
func (m *Metrics) Describe() string {
	if m == nil {
		return "no metrics read"
	}
	return fmt.Sprintf("%s (%d VMIs with a dirty rate)", m.From, len(m.dirty))
}
