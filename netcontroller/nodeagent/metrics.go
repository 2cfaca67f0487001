package nodeagent

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Metrics are the agent's gauges of its node's neighbour table, its rounds, and its migration
// traffic and budget, served on its health port (/metrics) and scraped by manifests/monitoring's
// PodMonitor; every series carries the node.
type Metrics struct {
	entries, budget, peers, tableEntries, insufficient *prometheus.GaugeVec
	thresh                                             *prometheus.GaugeVec
	overflows                                          *prometheus.CounterVec
	// The migration traffic (metrics_migration.go).
	migrationBytes, budgetHeld, budgetDrops *prometheus.CounterVec
	migrationBudget, shapingState           *prometheus.GaugeVec
	rounds                                  *roundCollector
}

// Names of the round gauges, read at each scrape from the agent's watchdog.
const (
	MetricRoundAge   = "migranet_probe_round_age_seconds"
	MetricRoundBound = "migranet_probe_round_bound_seconds"
)

// roundCollector exports the age of the last finished round and the bound of the one in
// progress, from the watchdog Run installs (nothing before).
type roundCollector struct {
	age, bound *prometheus.Desc
	mu         sync.Mutex
	node       string
	w          *Watchdog
}

func (c *roundCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.age; ch <- c.bound }

func (c *roundCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	node, w := c.node, c.w
	c.mu.Unlock()
	if w == nil {
		return
	}
	last, bound := w.State()
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, time.Since(last).Seconds(), node)
	ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, bound.Seconds(), node)
}

// watch exports w's rounds as node's (nothing on a nil Metrics).
func (m *Metrics) watch(node string, w *Watchdog) {
	if m == nil {
		return
	}
	m.rounds.mu.Lock()
	defer m.rounds.mu.Unlock()
	m.rounds.node, m.rounds.w = node, w
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
		rounds: &roundCollector{
			age:   prometheus.NewDesc(MetricRoundAge, "Seconds since the probe agent last finished a round (its liveness check fails once this reaches migranet_probe_round_bound_seconds).", node, nil),
			bound: prometheus.NewDesc(MetricRoundBound, "How long the probe agent may go without finishing a round: 3 of its round's periods (the interval, longer when the probe rate limit stretches a round).", node, nil),
		},
	}
	m.migrationMetrics()
	for _, c := range []prometheus.Collector{m.entries, m.budget, m.peers, m.tableEntries, m.insufficient, m.thresh, m.overflows, m.rounds,
		m.migrationBytes, m.budgetHeld, m.budgetDrops, m.migrationBudget, m.shapingState} {
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
