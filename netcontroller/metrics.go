package netcontroller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/status"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Names of the migration network's gauges.
const (
	MetricReady      = "migranet_migration_network_ready"
	MetricConfigured = "migranet_migration_network_configured"
	MetricNodes      = "migranet_migration_network_nodes"
	MetricAddresses  = "migranet_migration_network_addresses"
	MetricForeign    = "migranet_migration_network_foreign_attachments"
)

// Steps of the network controller, counted in status.MetricReconcileSteps.
const (
	ControllerName = "netcontroller"
	StepObserve    = "observe" // reading nodes, virt-handler pods and the KubeVirt CR from the cache
	StepStatus     = "status"  // writing Ready, IPCapacity, nodes and capacity
	StepCleanup    = "cleanup" // whereabouts IP pools: stale pools deleted once per applied value; leaked allocations of the current pool released
)

// Metrics are the network controller's collectors: its reconcile steps and gauges of its latest
// observation. The gauges exist only once an observation was made, so a replica that is not the
// leader (and observes nothing) exports none of them. A nil *Metrics records nothing.
type Metrics struct {
	steps      *status.Metrics
	ready      *prometheus.GaugeVec
	configured *prometheus.GaugeVec
	nodes      *prometheus.GaugeVec
	addresses  *prometheus.GaugeVec
	foreign    *prometheus.GaugeVec
}

// NewMetrics creates the collectors and registers them with reg (nil: not registered), reusing
// any registered before by another instance.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	steps, err := status.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	m := &Metrics{steps: steps}
	gauges := []struct {
		dst    **prometheus.GaugeVec
		name   string
		help   string
		labels []string
	}{
		{&m.ready, MetricReady, "1 when the vm-migration-network setting is Ready (every eligible node attached, or no migration network and KubeVirt available), else 0.", nil},
		{&m.configured, MetricConfigured, "1 when the vm-migration-network setting asks for a migration network, 0 when migrations use the pod network.", nil},
		{&m.nodes, MetricNodes, "Nodes eligible for virt-handler (state=eligible) and those of them attached to the migration network with an address in its range (state=attached); absent while no migration network is configured.", []string{"state"}},
		{&m.foreign, MetricForeign, "Objects other than virt-handler pods that attach a migration NAD (kind=Pod or VirtualMachineInstance), found by the leader's periodic scan; they predate the guard policies, which refuse new ones.", []string{"kind"}},
		{&m.addresses, MetricAddresses, "Addresses of the migration range: assignable (kind=usable) and held (kind=used: the allocations of its whereabouts IPPool, at least those virt-handler pods report); absent while no migration network is configured.", []string{"kind"}},
	}
	for _, g := range gauges {
		vec, err := status.RegisterOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: g.name, Help: g.help}, g.labels))
		if err != nil {
			return nil, err
		}
		*g.dst = vec
	}
	return m, nil
}

// init creates the step series with zero counts.
func (m *Metrics) init() {
	if m == nil {
		return
	}
	m.steps.Init(ControllerName, StepObserve, StepStatus, StepCleanup)
}

// step counts one run of a reconcile step.
func (m *Metrics) step(step string, err error) {
	if m == nil {
		return
	}
	m.steps.Step(ControllerName, step, err)
}

// observed sets the gauges from a snapshot and, when a migration network is configured, its
// capacity; with none configured the node and address series are removed.
func (m *Metrics) observed(snap *settings.Snapshot, capacity *v1beta1.IPCapacity) {
	if m == nil || snap == nil {
		return
	}
	m.ready.WithLabelValues().Set(boolGauge(snap.Ready))
	m.configured.WithLabelValues().Set(boolGauge(snap.Configured))
	if !snap.Configured {
		m.nodes.Reset()
		m.addresses.Reset()
		return
	}
	m.nodes.WithLabelValues("eligible").Set(float64(snap.Eligible))
	m.nodes.WithLabelValues("attached").Set(float64(snap.Attached))
	if capacity == nil {
		m.addresses.Reset()
		return
	}
	m.addresses.WithLabelValues("usable").Set(float64(capacity.Usable))
	m.addresses.WithLabelValues("used").Set(float64(capacity.Used))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// foreignAttachments sets the count of objects of kind besides virt-handlers on the network.
func (m *Metrics) foreignAttachments(kind string, n int) {
	if m == nil {
		return
	}
	m.foreign.WithLabelValues(kind).Set(float64(n))
}
