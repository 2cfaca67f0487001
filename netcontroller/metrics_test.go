package netcontroller

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// observeInto runs what Reconcile runs between reading the cache and writing the status, and
// feeds the result to m; it returns the conditions Reconcile would write.
func observeInto(t *testing.T, m *Metrics, value string, pods ...*corev1.Pod) []metav1.Condition {
	t.Helper()
	mn := parse(t, value)
	s := &v1beta1.Setting{Value: value}
	if value == valueA {
		s.Status.AppliedHash = hashA
	}
	in := Input{Namespace: "kubevirt", Nodes: []*corev1.Node{node("n1", nil), node("n2", nil), node("n3", nil)}, Pods: pods}
	if mn != nil {
		in.Network, in.Range = "net-a", netip.MustParsePrefix("192.168.100.0/24")
	}
	snap := judge(s, settings.EffectiveOf(mn), kubeVirt("True", settings.KubeVirtReadyReason), Observe(in))
	conds, _, capacity := statusOf(snap, mn, Observe(in))
	m.observed(snap, capacity)
	return conds
}

func TestGaugesFollowObservations(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := func(name, nodeName, networks, ip string) *corev1.Pod {
		return handlerPod(name, nodeName, networks, ip, true)
	}

	// Rolling out: n3's virt-handler is still on the old network.
	observeInto(t, m, valueA, h("h1", "n1", "net-a@migration0", "192.168.100.2"), h("h2", "n2", "net-a@migration0", "192.168.100.3"),
		h("h3", "n3", "net-old@migration0", ""))
	want := `
# HELP migranet_migration_network_addresses Addresses of the migration range: assignable (kind=usable), held (kind=used: the allocations of its whereabouts IPPool, at least those virt-handler pods report) and free (kind=free: usable minus used, computed exactly, then rounded once); absent while no migration network is configured. Counts above 2^53 are rounded to the nearest float64 (see migranet_migration_network_addresses_exact); the Setting's status.capacity has them exactly.
# TYPE migranet_migration_network_addresses gauge
migranet_migration_network_addresses{kind="free"} 252
migranet_migration_network_addresses{kind="usable"} 254
migranet_migration_network_addresses{kind="used"} 2
# HELP migranet_migration_network_addresses_exact 1 while every migranet_migration_network_addresses series holds its count exactly, 0 when one is rounded (above 2^53, as an IPv6 range's usable count is); absent while no migration network is configured.
# TYPE migranet_migration_network_addresses_exact gauge
migranet_migration_network_addresses_exact 1
# HELP migranet_migration_network_configured 1 when the vm-migration-network setting asks for a migration network, 0 when migrations use the pod network.
# TYPE migranet_migration_network_configured gauge
migranet_migration_network_configured 1
# HELP migranet_migration_network_nodes Nodes eligible for virt-handler (state=eligible) and those of them attached to the migration network with an address in its range (state=attached); absent while no migration network is configured.
# TYPE migranet_migration_network_nodes gauge
migranet_migration_network_nodes{state="attached"} 2
migranet_migration_network_nodes{state="eligible"} 3
# HELP migranet_migration_network_ready 1 when the vm-migration-network setting is Ready (every eligible node attached, or no migration network and KubeVirt available), else 0.
# TYPE migranet_migration_network_ready gauge
migranet_migration_network_ready 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricAddresses, MetricAddressesExact, MetricConfigured, MetricNodes, MetricReady); err != nil {
		t.Errorf("rolling out: %v", err)
	}

	// Rolled out.
	observeInto(t, m, valueA, h("h1", "n1", "net-a@migration0", "192.168.100.2"), h("h2", "n2", "net-a@migration0", "192.168.100.3"),
		h("h3", "n3", "net-a@migration0", "192.168.100.4"))
	for name, tc := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"ready": {m.ready.WithLabelValues(), 1}, "attached": {m.nodes.WithLabelValues("attached"), 3},
		"used": {m.addresses.WithLabelValues("used"), 3}, "usable": {m.addresses.WithLabelValues("usable"), 254},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("rolled out: %s = %v, want %v", name, got, tc.want)
		}
	}

	// Disabled: migrations use the pod network; the node and address series go away.
	observeInto(t, m, "", h("h1", "n1", "", ""))
	if got := testutil.ToFloat64(m.configured.WithLabelValues()); got != 0 {
		t.Errorf("disabled: configured = %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.ready.WithLabelValues()); got != 1 {
		t.Errorf("disabled with KubeVirt available: ready = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.nodes) + testutil.CollectAndCount(m.addresses) + testutil.CollectAndCount(m.exact); n != 0 {
		t.Errorf("disabled: %d node/address series left, want none", n)
	}
}

func TestGaugesAbsentBeforeTheFirstObservation(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.init()
	n, err := testutil.GatherAndCount(reg, MetricReady, MetricConfigured, MetricNodes, MetricAddresses)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a replica that observed nothing (not the leader) exports %d gauge series, want 0", n)
	}
	m.step(StepStatus, errors.New("conflict"))
	if n := testutil.CollectAndCount(m.ready) + testutil.CollectAndCount(m.nodes); n != 0 {
		t.Errorf("counting a step created %d gauge series", n)
	}
	steps, err := testutil.GatherAndCount(reg, statuswrite.MetricReconcileSteps)
	if err != nil {
		t.Fatal(err)
	}
	if steps != 6 { // observe, status, cleanup x success, error
		t.Errorf("reconcile step series = %d, want 6", steps)
	}
}

func TestNilMetricsIsSafe(t *testing.T) {
	var m *Metrics
	m.init()
	m.step(StepObserve, nil)
	m.observed(&health.Snapshot{Configured: true, Ready: true}, &v1beta1.IPCapacity{Usable: "1"})
}

func TestEventsOnTransitionsOnly(t *testing.T) {
	stored := []metav1.Condition{
		{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodesNotAttached, Message: "1 of 3"},
		{Type: v1beta1.ConditionIPCapacity, Status: metav1.ConditionTrue, Reason: ReasonSufficient},
	}
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  []string
	}{
		{"rollout progresses: message only", []metav1.Condition{
			{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodesNotAttached, Message: "2 of 3"},
			{Type: v1beta1.ConditionIPCapacity, Status: metav1.ConditionTrue, Reason: ReasonSufficient, Message: "250 free"},
		}, nil},
		{"rollout done", []metav1.Condition{
			{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, Message: "all 3"},
		}, []string{"Normal AllNodesAttached all 3"}},
		{"KubeVirt breaks and capacity runs low", []metav1.Condition{
			{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: health.ReasonKubeVirtNotReady, Message: "kv"},
			{Type: v1beta1.ConditionIPCapacity, Status: metav1.ConditionFalse, Reason: ReasonLowCapacity, Message: "only 1"},
		}, []string{"Warning KubeVirtNotReady kv", "Warning LowCapacity only 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := &Controller{Recorder: rec}
			r.recordTransitions(&v1beta1.Setting{Status: v1beta1.SettingStatus{Conditions: stored}}, tc.conds)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("events = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRolloutStartIsNormal: a new value starting its rollout (Ready turns False with NotApplied,
// then NodesNotAttached) is routine and recorded as Normal events, not Warnings.
// Catches: a Warning event on every rollout start.
func TestRolloutStartIsNormal(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &Controller{Recorder: rec}
	s := &v1beta1.Setting{Status: v1beta1.SettingStatus{Conditions: []metav1.Condition{
		{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady}}}}
	for _, reason := range []string{ReasonNotApplied, ReasonNodesNotAttached} {
		c := metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: "m"}
		r.recordTransitions(s, []metav1.Condition{c})
		s.Status.Conditions = []metav1.Condition{c}
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if want := []string{"Normal NotApplied m", "Normal NodesNotAttached m"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// TestStatusOfFields: the status fields the network controller applies. No node list is an
// untyped nil (ApplyStatus leaves nil fields out, removing them), never an empty or typed-nil list;
// a node list is passed as observed.
func TestStatusOfFields(t *testing.T) {
	m := parse(t, valueA)
	nodes := []v1beta1.NodeMigrationStatus{{Name: "n1", IP: "192.168.100.2"}, {Name: "n2", Reason: ReasonNoPod}}
	_, fields, capacity := statusOf(&health.Snapshot{}, m, Observation{Nodes: nodes, Used: 1})
	if got, ok := fields["nodes"].([]v1beta1.NodeMigrationStatus); !ok || len(got) != 2 || got[0].IP != "192.168.100.2" {
		t.Errorf("nodes field = %#v, want the two observed nodes", fields["nodes"])
	}
	// 192.168.100.0/24: 254 usable, 1 used.
	if capacity == nil || *capacity != (v1beta1.IPCapacity{Usable: "254", Used: "1", Free: "253", Summary: "1/254"}) || fields["capacity"] != capacity {
		t.Errorf("capacity = %+v (field %v), want 254/1/253", capacity, fields["capacity"])
	}
	_, fields, capacity = statusOf(&health.Snapshot{}, nil, Observation{})
	if fields["nodes"] != nil || fields["capacity"] != nil || capacity != nil {
		t.Errorf("disabled: fields %#v, capacity %v; want untyped nils", fields, capacity)
	}
}

// TestCapacityThreshold: IPCapacity turns low below 10 % free or below 2 free, not at them.
func TestCapacityThreshold(t *testing.T) {
	for _, tc := range []struct {
		rng  string
		used int64
		want string
	}{
		// 10.0.0.0/27: 30 usable. 3 free is exactly 10 %.
		{"10.0.0.0/27", 27, ReasonSufficient},
		{"10.0.0.0/27", 28, ReasonLowCapacity},
		// 10.0.0.0/28: 14 usable. 2 free is above 10 % and not below 2.
		{"10.0.0.0/28", 12, ReasonSufficient},
		{"10.0.0.0/28", 13, ReasonLowCapacity},
		// An IPv6 /64: 2^64-2 usable. Catches: free*10 computed in int64 (it overflows, turns
		// negative and calls a nearly empty /64 low).
		{"fd00:10:77::/64", 3, ReasonSufficient},
		// fd00::/125: 6 usable.
		{"fd00::/125", 4, ReasonSufficient},
		{"fd00::/125", 5, ReasonLowCapacity},
	} {
		m := parse(t, `{"clusterNetwork":"migration","range":"`+tc.rng+`"}`)
		cond, c := capacityOf(m, Observation{Used: tc.used})
		if cond.Reason != tc.want {
			t.Errorf("%s with %d used (%+v): %s, want %s", tc.rng, tc.used, c, cond.Reason, tc.want)
		}
	}
}

// TestGaugesOfAnIPv6Range: an IPv6 /64's counts are exact in the status and rounded once to the
// nearest float64 in the gauges, which say so. Catches: the exact gauge claiming 1 for a rounded
// count; a count clamped to an int64 (9223372036854775807 in the status).
func TestGaugesOfAnIPv6Range(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	mn := parse(t, `{"clusterNetwork":"migration","range":"fd00:10:77::/64","exclude":["fd00:10:77::1/128"]}`)
	_, capacity := capacityOf(mn, Observation{Used: 3})
	if capacity.Usable != "18446744073709551613" || capacity.Free != "18446744073709551610" || capacity.Summary != "3/2^64-3" {
		t.Fatalf("capacity = %+v", capacity)
	}
	m.observed(&health.Snapshot{Configured: true}, capacity)
	if got := testutil.ToFloat64(m.addresses.WithLabelValues("usable")); got != 0x1p64 {
		t.Errorf("usable gauge = %v, want 2^64 (the nearest float64)", got)
	}
	if got := testutil.ToFloat64(m.addresses.WithLabelValues("free")); got != 0x1p64 {
		t.Errorf("free gauge = %v, want 2^64", got)
	}
	if got := testutil.ToFloat64(m.exact.WithLabelValues()); got != 0 {
		t.Errorf("exact gauge = %v, want 0: the counts were rounded", got)
	}
}
