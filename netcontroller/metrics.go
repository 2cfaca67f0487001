package netcontroller

import (
	"math/big"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Names of the migration network's gauges.
const (
	MetricReady      = "migranet_migration_network_ready"
	MetricConfigured = "migranet_migration_network_configured"
	MetricNodes      = "migranet_migration_network_nodes"
	MetricAddresses  = "migranet_migration_network_addresses"
	MetricForeign    = "migranet_migration_network_foreign_attachments"
	// MetricAddressesExact is 1 while every address gauge holds its count exactly, 0 once one is
	// rounded: a float64 holds every integer up to 2^53 only, and an IPv6 range counts beyond.
	MetricAddressesExact = "migranet_migration_network_addresses_exact"
	// MetricPaths counts the pairs of attached nodes by state (verified, failing, unverified).
	MetricPaths = "migranet_migration_network_paths"
	// MetricPathsFailing counts the failing directions between attached nodes by reason.
	MetricPathsFailing = "migranet_migration_network_paths_failing"
	// MetricProbeRound is the longest last probe round over the nodes' reports, in seconds.
	MetricProbeRound = "migranet_migration_network_probe_round_seconds"
	// MetricSilentAgents counts the attached nodes whose probe agent is silent (AgentSilent).
	MetricSilentAgents = "migranet_migration_network_silent_agents"
)

// The states and reasons the path gauges always carry (each at 0 when none), so a query or alert
// sees a series before the first failure.
var (
	pathStates  = []string{"verified", "failing", "unverified"}
	pathReasons = []string{v1beta1.PathUnreachable, v1beta1.PathOneWay, v1beta1.PathMTU}
)

// Steps of the network controller, counted in statuswrite.MetricReconcileSteps.
const (
	ControllerName = "netcontroller"
	StepObserve    = "observe" // reading nodes, virt-handler pods and the KubeVirt CR from the cache
	StepStatus     = "status"  // writing Ready, IPCapacity, nodes and capacity
	StepCleanup    = "cleanup" // whereabouts IP pools: stale and empty pools of earlier ranges deleted once per applied value; leaked allocations of the current pool released
)

// Metrics are the network controller's collectors: its reconcile steps and gauges of its latest
// observation. The gauges exist only once an observation was made, so a replica that is not the
// leader (and observes nothing) exports none of them. A nil *Metrics records nothing.
type Metrics struct {
	steps      *statuswrite.Metrics
	ready      *prometheus.GaugeVec
	configured *prometheus.GaugeVec
	nodes      *prometheus.GaugeVec
	addresses  *prometheus.GaugeVec
	exact      *prometheus.GaugeVec
	foreign    *prometheus.GaugeVec
	pairs      *prometheus.GaugeVec
	failing    *prometheus.GaugeVec
	round      *prometheus.GaugeVec
	silent     *prometheus.GaugeVec
}

// NewMetrics creates the collectors and registers them with reg (nil: not registered), reusing
// any registered before by another instance.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	steps, err := statuswrite.NewMetrics(reg)
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
		{&m.addresses, MetricAddresses, "Addresses of the migration range: assignable (kind=usable), held (kind=used: the allocations of its whereabouts IPPool, at least those virt-handler pods report) and free (kind=free: usable minus used, computed exactly, then rounded once); absent while no migration network is configured. Counts above 2^53 are rounded to the nearest float64 (see " + MetricAddressesExact + "); the Setting's status.capacity has them exactly.", []string{"kind"}},
		{&m.pairs, MetricPaths, "Unordered pairs of nodes attached to the migration network by the state of their path, from the probe agents' PathReports: verified (both directions, full MTU, fresh), failing (a fresh report lists the other node), unverified (a node new, its agent down, stale or unable to probe); absent while no migration network is configured.", []string{"state"}},
		{&m.failing, MetricPathsFailing, "Failing directions between attached nodes by reason (Unreachable, OneWay, MTU), from fresh PathReports; a pair failing both ways counts twice; absent while no migration network is configured.", []string{"reason"}},
		{&m.silent, MetricSilentAgents, "Attached nodes whose probe agent has finished no round within its bound (3 of its intervals): the Healthy condition's AgentSilent; absent while no migration network is configured.", nil},
		{&m.round, MetricProbeRound, "The longest last probe round (completed - started) over the nodes' PathReports on the current migration network, in seconds; absent while no migration network is configured.", nil},
		{&m.exact, MetricAddressesExact, "1 while every " + MetricAddresses + " series holds its count exactly, 0 when one is rounded (above 2^53, as an IPv6 range's usable count is); absent while no migration network is configured.", nil},
	}
	for _, g := range gauges {
		vec, err := statuswrite.RegisterOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: g.name, Help: g.help}, g.labels))
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
func (m *Metrics) observed(snap *health.Snapshot, capacity *v1beta1.IPCapacity) {
	if m == nil || snap == nil {
		return
	}
	m.ready.WithLabelValues().Set(boolGauge(snap.Ready))
	m.configured.WithLabelValues().Set(boolGauge(snap.Configured))
	if !snap.Configured {
		m.nodes.Reset()
		m.addresses.Reset()
		m.exact.Reset()
		return
	}
	m.nodes.WithLabelValues("eligible").Set(float64(snap.Eligible))
	m.nodes.WithLabelValues("attached").Set(float64(snap.Attached))
	if capacity == nil {
		m.addresses.Reset()
		m.exact.Reset()
		return
	}
	exact := true
	for kind, count := range map[string]v1beta1.Count{"usable": capacity.Usable, "used": capacity.Used, "free": capacity.Free} {
		v, isExact := countGauge(count)
		m.addresses.WithLabelValues(kind).Set(v)
		exact = exact && isExact
	}
	m.exact.WithLabelValues().Set(boolGauge(exact))
}

// countGauge is c as the nearest float64, and whether that is c exactly.
func countGauge(c v1beta1.Count) (float64, bool) {
	n, ok := c.Big()
	if !ok {
		return 0, false
	}
	f, acc := new(big.Float).SetInt(n).Float64()
	return f, acc == big.Exact
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

// initPaths creates the path writer's step series with zero counts.
func (m *Metrics) initPaths() {
	if m == nil {
		return
	}
	m.steps.Init(PathsControllerName, StepPathsStatus)
}

// pathStep counts one status write of the path writer.
func (m *Metrics) pathStep(err error) {
	if m == nil {
		return
	}
	m.steps.Step(PathsControllerName, StepPathsStatus, err)
}

// pathsObserved sets the path gauges from a verdict and the longest round; nil (no migration network)
// removes them.
func (m *Metrics) pathsObserved(v *pathVerdict, longest time.Duration) {
	if m == nil {
		return
	}
	if v == nil {
		m.pairs.Reset()
		m.failing.Reset()
		m.round.Reset()
		m.silent.Reset()
		return
	}
	m.silent.WithLabelValues().Set(float64(len(v.silent)))
	counts := map[string]int32{"verified": v.paths.Verified, "failing": v.paths.Failing, "unverified": v.paths.Unverified}
	for _, state := range pathStates {
		m.pairs.WithLabelValues(state).Set(float64(counts[state]))
	}
	for _, reason := range pathReasons {
		m.failing.WithLabelValues(reason).Set(float64(v.byReason[reason]))
	}
	m.round.WithLabelValues().Set(longest.Seconds())
}
