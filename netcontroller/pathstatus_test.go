package netcontroller

import (
	kubevirtv1 "kubevirt.io/api/core/v1"

	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

const pathNet = "kubevirt/vm-migration-network-abc"

var p0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// pathReport is node's report on pathNet: probing since p0, a round [p0+1s, p0+2s] every 10 s
// (fresh until p0+32s), listing failing.
func pathReport(node string, failing ...v1beta1.PeerPath) *v1beta1.PathReport {
	r := &v1beta1.PathReport{Network: pathNet, IntervalSeconds: 10, MTU: 9000, Since: metav1.NewMicroTime(p0), Failing: failing,
		LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(p0.Add(time.Second)), Completed: metav1.NewMicroTime(p0.Add(2 * time.Second))}}
	r.Name = node
	return r
}

func TestJudgePaths(t *testing.T) {
	now := p0.Add(5 * time.Second)
	mtu := func(to string) v1beta1.PeerPath {
		return v1beta1.PeerPath{Node: to, Reason: v1beta1.PathMTU, Largest: 1500}
	}
	unreachable := func(to string) v1beta1.PeerPath { return v1beta1.PeerPath{Node: to, Reason: v1beta1.PathUnreachable} }
	stale := func(r *v1beta1.PathReport) *v1beta1.PathReport {
		r.LastRound.Started, r.LastRound.Completed = metav1.NewMicroTime(p0.Add(-time.Minute)), metav1.NewMicroTime(p0.Add(-time.Minute))
		return r
	}
	// silent: the node's last round ended 40 s ago, 10 s past its bound (3 × 10 s).
	silent := func(r *v1beta1.PathReport) *v1beta1.PathReport {
		r.Since = metav1.NewMicroTime(p0.Add(-time.Minute))
		r.LastRound.Started, r.LastRound.Completed = metav1.NewMicroTime(p0.Add(-36*time.Second)), metav1.NewMicroTime(p0.Add(-35*time.Second))
		return r
	}
	// starting: the node's agent began 20 s ago and has not finished its first round: slow, not
	// silent (10 s left).
	starting := func(r *v1beta1.PathReport) *v1beta1.PathReport {
		r.Since, r.LastRound = metav1.NewMicroTime(p0.Add(-20*time.Second)), nil
		return r
	}
	tests := []struct {
		name     string
		reports  []*v1beta1.PathReport
		attached []string
		status   metav1.ConditionStatus
		reason   string
		message  []string // substrings
		unwanted []string // substrings it must not hold
		paths    string   // status.paths.summary
		byReason map[string]int
	}{
		{name: "all verified", reports: []*v1beta1.PathReport{pathReport("a"), pathReport("b"), pathReport("c")}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionTrue, reason: ReasonPathsVerified, message: []string{"every pair"}, paths: "3/3 verified"},
		{name: "one attached node: nothing proven", reports: nil, attached: []string{"a"},
			status: metav1.ConditionUnknown, reason: ReasonNotProbed, message: []string{"fewer than two"}, paths: "0/0 verified"},
		{name: "a pair fails: worst node first, the pair named", reports: []*v1beta1.PathReport{pathReport("a", mtu("c"), unreachable("b")), pathReport("b"), pathReport("c", mtu("a"))}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionFalse, reason: ReasonPathsFailing, message: []string{"most from or to a:", "no probe from a reaches b", "kubectl get mpr"},
			paths: "1/3 verified, 2 failing", byReason: map[string]int{v1beta1.PathMTU: 2, v1beta1.PathUnreachable: 1}},
		{name: "failing beats unverified", reports: []*v1beta1.PathReport{pathReport("a", unreachable("b")), pathReport("b")}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionFalse, reason: ReasonPathsFailing, message: []string{"no probe from a reaches b"}, paths: "0/3 verified, 1 failing",
			byReason: map[string]int{v1beta1.PathUnreachable: 1}},
		{name: "a failure towards a node not attached does not count", reports: []*v1beta1.PathReport{pathReport("a", unreachable("gone")), pathReport("b")}, attached: []string{"a", "b"},
			status: metav1.ConditionTrue, reason: ReasonPathsVerified, paths: "1/1 verified"},
		{name: "one agent missing: unverified, naming it", reports: []*v1beta1.PathReport{pathReport("a"), pathReport("b")}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionUnknown, reason: ReasonPathsUnverified, message: []string{"node c is without fresh probe results"}, paths: "1/3 verified"},
		{name: "a stale failing report: unverified, not failing", reports: []*v1beta1.PathReport{stale(pathReport("a", unreachable("b"))), pathReport("b")}, attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonPathsUnverified, message: []string{"node a is without fresh"}, paths: "0/1 verified"},
		{name: "an agent silent: False, naming it", reports: []*v1beta1.PathReport{pathReport("a"), pathReport("b"), silent(pathReport("c"))}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionFalse, reason: ReasonAgentSilent, message: []string{"no path fails, but the probe agent of node c finished no round within its bound", "kubectl -n migranet-probe get pods"},
			paths: "1/3 verified"},
		{name: "an agent slow to finish its first round: Unknown", reports: []*v1beta1.PathReport{pathReport("a"), pathReport("b"), starting(pathReport("c"))}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionUnknown, reason: ReasonPathsUnverified, message: []string{"node c is without fresh probe results"}, paths: "1/3 verified"},
		{name: "every agent silent: silent, not unprobed", reports: []*v1beta1.PathReport{silent(pathReport("a")), silent(pathReport("b"))}, attached: []string{"a", "b"},
			status: metav1.ConditionFalse, reason: ReasonAgentSilent, message: []string{"the probe agent of nodes a, b finished no round"}, paths: "0/1 verified"},
		{name: "failing beats silent, which it names too", reports: []*v1beta1.PathReport{pathReport("a", unreachable("b")), pathReport("b"), silent(pathReport("c"))}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionFalse, reason: ReasonPathsFailing, message: []string{"no probe from a reaches b", "and the probe agent of c is silent"}, paths: "0/3 verified, 1 failing",
			byReason: map[string]int{v1beta1.PathUnreachable: 1}},
		{name: "a silent agent's peer lists it failing: the pair fails", reports: []*v1beta1.PathReport{pathReport("a", mtu("c")), pathReport("b"), silent(pathReport("c"))}, attached: []string{"a", "b", "c"},
			status: metav1.ConditionFalse, reason: ReasonPathsFailing, message: []string{"9000-byte frames from a to c"}, paths: "1/3 verified, 1 failing",
			byReason: map[string]int{v1beta1.PathMTU: 1}},
		{name: "a node joined, not yet probed by its peers", reports: []*v1beta1.PathReport{pathReport("a"), func() *v1beta1.PathReport {
			r := pathReport("b")
			// b began probing after a's last round started: a has not probed b yet.
			r.Since = metav1.NewMicroTime(p0.Add(1500 * time.Millisecond))
			r.LastRound.Started = metav1.NewMicroTime(p0.Add(1600 * time.Millisecond))
			return r
		}()}, attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonPathsUnverified, message: []string{"not been probed by every peer"}, paths: "0/1 verified"},
		{name: "no agent reports: not probed", reports: nil, attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonNotProbed, message: []string{"no attached node has fresh probe results on " + pathNet, "migranet probe"}, paths: "0/1 verified"},
		{name: "every agent reports a problem: not probed, naming the problem, not the agent", reports: problemReports(v1beta1.ProbeNoInterface, "no migration0", "a", "b"), attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonNotProbed, message: []string{"every probe agent reports " + v1beta1.ProbeNoInterface + " (a: no migration0)"}, paths: "0/1 verified"},
		{name: "simulated node networks: not measured, no agent blamed", reports: problemReports(v1beta1.ProbeNotMeasured, "not measured on simulated networks (no ping)", "a", "b"), attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonNotProbed, message: []string{"the paths of " + pathNet + " are not measured on simulated networks (no ping)"},
			unwanted: []string{"agent"}, paths: "0/1 verified"},
		{name: "reports of another network: not probed", reports: []*v1beta1.PathReport{func() *v1beta1.PathReport {
			r := pathReport("a")
			r.Network = "kubevirt/old"
			return r
		}()}, attached: []string{"a", "b"},
			status: metav1.ConditionUnknown, reason: ReasonNotProbed, paths: "0/1 verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgePaths(health.Paths(pathNet, tt.reports), pathNet, tt.attached, now)
			if v.cond.Type != v1beta1.ConditionHealthy || v.cond.Status != tt.status || v.cond.Reason != tt.reason {
				t.Fatalf("condition %s=%s %s (%q), want %s %s", v.cond.Type, v.cond.Status, v.cond.Reason, v.cond.Message, tt.status, tt.reason)
			}
			for _, want := range tt.message {
				if !strings.Contains(v.cond.Message, want) {
					t.Errorf("message %q lacks %q", v.cond.Message, want)
				}
			}
			for _, not := range tt.unwanted {
				if strings.Contains(v.cond.Message, not) {
					t.Errorf("message %q names %q", v.cond.Message, not)
				}
			}
			if v.paths.Summary != tt.paths {
				t.Errorf("paths summary %q, want %q", v.paths.Summary, tt.paths)
			}
			for _, reason := range pathReasons {
				if v.byReason[reason] != tt.byReason[reason] {
					t.Errorf("failing directions %s = %d, want %d", reason, v.byReason[reason], tt.byReason[reason])
				}
			}
			// The message only changes on transitions: it holds no time, whatever the clock says.
			later := judgePaths(health.Paths(pathNet, tt.reports), pathNet, tt.attached, now.Add(time.Second))
			if later.cond != v.cond {
				t.Errorf("one second later the condition is %+v, was %+v", later.cond, v.cond)
			}
			if strings.Contains(v.cond.Message, "2026") {
				t.Errorf("message %q holds a time", v.cond.Message)
			}
		})
	}
}

// TestSilentEvents: a Warning event names each node whose agent falls silent, once, also while
// another reason holds Healthy (a failing path); none when the condition's own transition to
// AgentSilent already named it; again once the node reported and falls silent anew.
// Catches: a silence told only through the condition (none while a path fails), an event per
// look (every reconcile repeats it), one never told again after the agent recovered.
func TestSilentEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &PathStatus{Recorder: rec}
	s := &v1beta1.Setting{}
	failing := pathVerdict{cond: metav1.Condition{Reason: ReasonPathsFailing}}
	silentOnly := pathVerdict{cond: metav1.Condition{Reason: ReasonAgentSilent}}
	for _, step := range []struct {
		v          pathVerdict
		silent     []string
		transition bool
		want       string // the event, "" for none
	}{
		{failing, []string{"c"}, false, "Warning AgentSilent the probe agent of node c finished no round"},
		{failing, []string{"c"}, false, ""},
		{failing, []string{"b", "c"}, false, "Warning AgentSilent the probe agent of node b finished no round"},
		{failing, nil, false, ""},
		{silentOnly, []string{"c"}, true, ""},
		{failing, []string{"c"}, false, ""},
		{failing, nil, false, ""},
		{failing, []string{"c"}, false, "Warning AgentSilent the probe agent of node c"},
	} {
		step.v.silent = step.silent
		r.tellSilent(s, step.v, step.transition)
		got := ""
		select {
		case got = <-rec.Events:
		default:
		}
		if (step.want == "") != (got == "") || !strings.HasPrefix(got, step.want) {
			t.Errorf("silent %v (transition %t): event %q, want %q", step.silent, step.transition, got, step.want)
		}
	}
}

func TestPathsEvents(t *testing.T) {
	for _, tt := range []struct {
		status       metav1.ConditionStatus
		reason       string
		kind, evReas string
	}{
		{metav1.ConditionTrue, ReasonPathsVerified, corev1.EventTypeNormal, ReasonPathsHealthy},
		{metav1.ConditionFalse, ReasonPathsFailing, corev1.EventTypeWarning, ReasonPathsFailing},
		{metav1.ConditionFalse, ReasonAgentSilent, corev1.EventTypeWarning, ReasonAgentSilent},
		{metav1.ConditionUnknown, ReasonPathsUnverified, corev1.EventTypeNormal, ReasonPathsUnverified},
		{metav1.ConditionUnknown, ReasonNotProbed, corev1.EventTypeNormal, ReasonNotProbed},
	} {
		c := metav1.Condition{Status: tt.status, Reason: tt.reason}
		if got := pathsEventType(c); got != tt.kind {
			t.Errorf("%s %s: event type %s, want %s", tt.status, tt.reason, got, tt.kind)
		}
		if got := pathsEventReason(c); got != tt.evReas {
			t.Errorf("%s %s: event reason %s, want %s", tt.status, tt.reason, got, tt.evReas)
		}
	}
}

func TestPathsWriteSpacing(t *testing.T) {
	r := &PathStatus{WriteInterval: 10 * time.Second}
	if w := r.wait(p0); w != 0 {
		t.Errorf("before any write: wait %v, want 0", w)
	}
	r.wrote(p0)
	if w := r.wait(p0.Add(4 * time.Second)); w != 6*time.Second {
		t.Errorf("4 s after a write: wait %v, want 6s", w)
	}
	if w := r.wait(p0.Add(10 * time.Second)); w > 0 {
		t.Errorf("10 s after a write: wait %v, want none", w)
	}
	if got := minPositive(0, 3*time.Second); got != 3*time.Second {
		t.Errorf("minPositive(0, 3s) = %v", got)
	}
	if got := minPositive(2*time.Second, 3*time.Second); got != 2*time.Second {
		t.Errorf("minPositive(2s, 3s) = %v", got)
	}
	// The stale report is looked at again just after it goes stale (p0+32s).
	h := health.Paths(pathNet, []*v1beta1.PathReport{pathReport("a"), pathReport("b")})
	if got := untilStale(h, p0.Add(5*time.Second)); got < 27*time.Second || got > 28*time.Second {
		t.Errorf("untilStale = %v, want just over 27s", got)
	}
}

func TestPathGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	reports := []*v1beta1.PathReport{pathReport("a", v1beta1.PeerPath{Node: "b", Reason: v1beta1.PathOneWay}), pathReport("b"), pathReport("c")}
	reports[2].LastRound.Completed = metav1.NewMicroTime(reports[2].LastRound.Started.Add(2500 * time.Millisecond))
	v := judgePaths(health.Paths(pathNet, reports), pathNet, []string{"a", "b", "c", "d"}, p0.Add(5*time.Second))
	m.pathsObserved(&v, LongestRound(pathNet, reports))
	want := `
# HELP migranet_migration_network_paths_failing Failing directions between attached nodes by reason (Unreachable, OneWay, MTU), from fresh PathReports; a pair failing both ways counts twice; absent while no migration network is configured.
# TYPE migranet_migration_network_paths_failing gauge
migranet_migration_network_paths_failing{reason="MTU"} 0
migranet_migration_network_paths_failing{reason="OneWay"} 1
migranet_migration_network_paths_failing{reason="Unreachable"} 0
# HELP migranet_migration_network_probe_round_seconds The longest last probe round (completed - started) over the nodes' PathReports on the current migration network, in seconds; absent while no migration network is configured.
# TYPE migranet_migration_network_probe_round_seconds gauge
migranet_migration_network_probe_round_seconds 2.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricPathsFailing, MetricProbeRound); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(m.silent.WithLabelValues()); got != 0 {
		t.Errorf("silent agents = %v, want 0", got)
	}
	v.silent = []string{"c", "d"}
	m.pathsObserved(&v, 0)
	if got := testutil.ToFloat64(m.silent.WithLabelValues()); got != 2 {
		t.Errorf("silent agents = %v, want 2", got)
	}
	// d has no report: its 3 pairs are unverified; a-b fails; a-c and b-c are verified.
	for state, n := range map[string]float64{"verified": 2, "failing": 1, "unverified": 3} {
		if got := testutil.ToFloat64(m.pairs.WithLabelValues(state)); got != n {
			t.Errorf("paths{state=%q} = %v, want %v", state, got, n)
		}
	}
	m.pathsObserved(nil, 0)
	if n := testutil.CollectAndCount(reg, MetricPaths, MetricPathsFailing, MetricProbeRound, MetricSilentAgents); n != 0 {
		t.Errorf("with no migration network %d path series remain, want none", n)
	}
}

// TestTrimPathReportKeepsTheHealth: the cache's trimmed reports judge every pair as the full ones.
func TestTrimPathReportKeepsTheHealth(t *testing.T) {
	full := func() []*v1beta1.PathReport {
		a := pathReport("a", v1beta1.PeerPath{Node: "b", Address: "192.168.100.3", Reason: v1beta1.PathMTU, Largest: 1400, Message: "lost", Since: ptr(metav1.NewMicroTime(p0.Add(1500 * time.Millisecond))), AfterCheck: true})
		a.Labels, a.Annotations, a.Address, a.AgentVersion = map[string]string{"x": "y"}, map[string]string{"a": "b"}, "192.168.100.2", "v1"
		a.LastRound.MaxRTTMicros, a.LastRound.MaxRTTNode = 900, "b"
		b := pathReport("b")
		b.Problem, b.Message = v1beta1.ProbeNoInterface, "no migration0"
		return []*v1beta1.PathReport{a, b, pathReport("c")}
	}
	var trimmed []*v1beta1.PathReport
	for _, r := range full() {
		out, err := TrimPathReport(r)
		if err != nil {
			t.Fatal(err)
		}
		trimmed = append(trimmed, out.(*v1beta1.PathReport))
	}
	if trimmed[0].Labels != nil || trimmed[0].Address != "" || trimmed[0].Failing[0].Message != "" || trimmed[0].LastRound.MaxRTTNode != "" {
		t.Errorf("not trimmed: %+v", trimmed[0])
	}
	now := p0.Add(5 * time.Second)
	nodes := []string{"a", "b", "c"}
	want := judgePaths(health.Paths(pathNet, full()), pathNet, nodes, now)
	got := judgePaths(health.Paths(pathNet, trimmed), pathNet, nodes, now)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pathVerdict{})); diff != "" {
		t.Errorf("trimmed reports judge otherwise (-full +trimmed):\n%s", diff)
	}
	if LongestRound(pathNet, trimmed) != LongestRound(pathNet, full()) {
		t.Errorf("trimmed reports lose the round's duration")
	}
	// The abort rule dates a failure by its Since: a migration a -> b that started before the
	// probe that found a's failure is aborted on the trimmed reports as on the full ones.
	started := metav1.NewTime(p0.Add(200 * time.Millisecond))
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b", StartTimestamp: &started}
	full1 := health.DecideAbort(vmi, health.Paths(pathNet, full()), settings.ModeEnforce, now)
	trim1 := health.DecideAbort(vmi, health.Paths(pathNet, trimmed), settings.ModeEnforce, now)
	if full1.Action != health.AbortDelete || trim1.Action != full1.Action {
		t.Errorf("abort on the full reports %v (%s), on the trimmed %v (%s): want both aborted", full1.Action, full1.Message, trim1.Action, trim1.Message)
	}
}

// Fault caught: the Healthy message naming every node with a failure as the worst: one node's
// narrowed uplink fails a direction of each of its peers too, and listing them hid the culprit.
func TestWorstNamesOnlyTheMost(t *testing.T) {
	for _, tc := range []struct {
		perNode map[string]int
		want    string
	}{
		{map[string]int{"node-1": 2, "node-2": 4, "node-3": 2}, "node-2"},
		{map[string]int{"b": 1, "a": 1}, "a, b"},
		{map[string]int{"d": 1, "c": 1, "b": 1, "a": 1}, "a, b, c"},
		{map[string]int{}, ""},
	} {
		if got := strings.Join(worst(tc.perNode, worstNodes), ", "); got != tc.want {
			t.Errorf("worst(%v) = %q, want %q", tc.perNode, got, tc.want)
		}
	}
}

// problemReports are the reports of nodes whose agents each say problem (message) and hold no round.
func problemReports(problem, message string, nodes ...string) []*v1beta1.PathReport {
	var out []*v1beta1.PathReport
	for _, n := range nodes {
		r := pathReport(n)
		r.Problem, r.Message, r.LastRound = problem, message, nil
		out = append(out, r)
	}
	return out
}

// TestHealthWithoutNetwork: the pod network has no Healthy condition; a NAD migranet does not judge
// in force has Healthy Unknown naming it (issue 52, item 1), never the verdict of the network
// that was in force before.
func TestHealthWithoutNetwork(t *testing.T) {
	if c := withoutNetwork(settings.Effective{}); c != nil {
		t.Errorf("pod network: %v, want no condition", c)
	}
	c := withoutNetwork(settings.Effective{NotJudged: &settings.NotJudgedNetwork{NAD: "sriov-mig", Ref: "kubevirt/sriov-mig", Why: "x"}})
	if len(c) != 1 || c[0].Type != v1beta1.ConditionHealthy || c[0].Status != metav1.ConditionUnknown || c[0].Reason != health.ReasonNetworkNotJudged ||
		!strings.Contains(c[0].Message, "kubevirt/sriov-mig") {
		t.Errorf("not judged: %+v, want Healthy Unknown %s naming kubevirt/sriov-mig", c, health.ReasonNetworkNotJudged)
	}
}
