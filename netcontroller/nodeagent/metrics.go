package nodeagent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Metrics are the agent's gauges of its node's neighbour table, served on its health port
// (/metrics) and scraped by manifests/monitoring's PodMonitor; every series carries the node.
type Metrics struct {
	entries, budget, peers, tableEntries, insufficient *prometheus.GaugeVec
	thresh                                             *prometheus.GaugeVec
	overflows                                          *prometheus.CounterVec
}

// NewMetrics registers the agent's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	node := []string{"node"}
	m := &Metrics{
		entries: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_entries",
			Help: "The most neighbour entries the probe agent's probes held at once in its last round."}, node),
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_budget",
			Help: "The probe agent's share of the node's neighbour table: gc_thresh2 / 4 entries."}, node),
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_peers",
			Help: "The peers the probe agent probed in its last round."}, node),
		tableEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_table_entries",
			Help: "Entries in the node's neighbour table of the migration network's family, every namespace together."}, node),
		insufficient: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_table_insufficient",
			Help: "1 while the node's neighbour table limits cannot hold the probing of the migration network's size (PathReport neighbourTable.message), else 0."}, node),
		thresh: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_neighbour_gc_thresh",
			Help: "The node's net.ipv{4,6}.neigh.default.gc_thresh1/2/3 (label threshold) for the migration network's family."}, []string{"node", "threshold"}),
		overflows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "migranet_probe_neighbour_table_overflows_total",
			Help: "New neighbour entries the kernel refused for want of room (gc_thresh3) during the probe agent's rounds."}, node),
	}
	for _, c := range []prometheus.Collector{m.entries, m.budget, m.peers, m.tableEntries, m.insufficient, m.thresh, m.overflows} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records a round's neighbour table (nothing on a nil Metrics).
func (m *Metrics) observe(node string, nt *v1beta1.NeighbourTable) {
	if m == nil || nt == nil {
		return
	}
	m.entries.WithLabelValues(node).Set(float64(nt.Entries))
	m.budget.WithLabelValues(node).Set(float64(nt.Budget))
	m.peers.WithLabelValues(node).Set(float64(nt.Peers))
	m.tableEntries.WithLabelValues(node).Set(float64(nt.TableEntries))
	bad := 0.0
	if nt.Message != "" {
		bad = 1
	}
	m.insufficient.WithLabelValues(node).Set(bad)
	for i, v := range []int32{nt.GCThresh1, nt.GCThresh2, nt.GCThresh3} {
		m.thresh.WithLabelValues(node, strconv.Itoa(i+1)).Set(float64(v))
	}
	m.overflows.WithLabelValues(node).Add(float64(nt.Overflows))
}
