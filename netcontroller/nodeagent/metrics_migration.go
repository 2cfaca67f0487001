package nodeagent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Directions as the metrics' direction label.
var directions = [2]string{DirIn: "in", DirOut: "out"}

// migrationMetrics makes the migration traffic's metrics.
func (m *Metrics) migrationMetrics() {
	nodeDir := []string{"node", "direction"}
	m.migrationBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "migranet_probe_migration_bytes_total",
		Help: "Bytes virt-handler's migration0 received (direction in) and sent (out): every migration byte of the node, and the probes."}, nodeDir)
	m.budgetHeld = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "migranet_probe_migration_budget_overlimits_total",
		Help: "Times the node's migration budget held a migration packet back (HTB overlimits of the migrations' class): the budget binding."}, nodeDir)
	m.budgetDrops = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "migranet_probe_migration_budget_drops_total",
		Help: "Migration packets the budget's queue had no room for (TCP sends them again)."}, nodeDir)
	m.migrationBudget = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_migration_budget_bytes_per_second",
		Help: "The node's migration budget in each direction, bytes a second; 0 without a budget."}, []string{"node"})
	m.shapingState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "migranet_probe_migration_shaping",
		Help: "1 for the state of the node's budget shaping (Off, Enforced, Failed), 0 for the others."}, []string{"node", "state"})
}

// budgetState records the budget in force and its shaping (nothing on a nil Metrics).
func (m *Metrics) budgetState(node string, st *v1beta1.MigrationTraffic) {
	if m == nil {
		return
	}
	m.migrationBudget.WithLabelValues(node).Set(float64(st.BudgetBytesPerSecond))
	for _, s := range []string{v1beta1.ShapingOff, v1beta1.ShapingEnforced, v1beta1.ShapingFailed} {
		v := 0.0
		if s == st.Shaping {
			v = 1
		}
		m.shapingState.WithLabelValues(node, s).Set(v)
	}
}

// traffic adds what the counters moved from prev to c; a counter that went back (migration0 or
// the shaping made anew) counts from zero.
func (m *Metrics) traffic(node string, prev, c Counters) {
	if m == nil || prev.At.IsZero() {
		return
	}
	m.migrationBytes.WithLabelValues(node, directions[DirIn]).Add(float64(sub(c.In, prev.In)))
	m.migrationBytes.WithLabelValues(node, directions[DirOut]).Add(float64(sub(c.Out, prev.Out)))
	for d := range directions {
		m.budgetHeld.WithLabelValues(node, directions[d]).Add(float64(sub(c.Shaped[d].Overlimits, prev.Shaped[d].Overlimits)))
		m.budgetDrops.WithLabelValues(node, directions[d]).Add(float64(sub(c.Shaped[d].Drops, prev.Shaped[d].Drops)))
	}
}
