package checktest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Now is the time path health is judged at in the fixtures.
var Now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// PathNet is the fixtures' NAD as PathReports name it.
var PathNet = settings.NADRef("kubevirt", NAD)

// ReportOpt changes a PathReport.
type ReportOpt func(*v1beta1.PathReport)

// PathReport is node's fresh report at Now: probing for an hour, a 20 s interval, its last round
// completed 25 s ago, nothing failing; opts change it.
func PathReport(node string, opts ...ReportOpt) *v1beta1.PathReport {
	r := &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, Network: PathNet, MTU: 9000, IntervalSeconds: 20,
		Since:     metav1.NewMicroTime(Now.Add(-time.Hour)),
		LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(Now.Add(-30 * time.Second)), Completed: metav1.NewMicroTime(Now.Add(-25 * time.Second))}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Failing adds a failing path to peer.
func Failing(peer, reason string, largest int32) ReportOpt {
	return func(r *v1beta1.PathReport) {
		r.Failing = append(r.Failing, v1beta1.PeerPath{Node: peer, Reason: reason, Largest: largest})
	}
}

// Stale makes the report's last round complete two minutes before Now: stale after one, and its
// agent silent (AgentSilent, health.SilentAfter of its 20 s interval).
func Stale(r *v1beta1.PathReport) {
	r.LastRound.Started, r.LastRound.Completed = metav1.NewMicroTime(Now.Add(-125*time.Second)), metav1.NewMicroTime(Now.Add(-2*time.Minute))
}

// Problem makes the agent unable to probe, its report written 5 s before Now: an agent that finds
// a problem writes its report every round with since then (nodeagent.Agent.round), so it is not
// silent.
func Problem(problem, message string) ReportOpt {
	return func(r *v1beta1.PathReport) {
		r.Problem, r.Message, r.LastRound = problem, message, nil
		r.Since = metav1.NewMicroTime(Now.Add(-5 * time.Second))
	}
}

// Joined makes the agent begin probing d before Now and complete its first round since: begun
// d/2 before Now, ended d/4 before. The others' rounds (begun 30 s before Now) predate it when d
// is under 30 s.
func Joined(d time.Duration) ReportOpt {
	return func(r *v1beta1.PathReport) {
		r.Since = metav1.NewMicroTime(Now.Add(-d))
		r.LastRound.Started, r.LastRound.Completed = metav1.NewMicroTime(Now.Add(-d/2)), metav1.NewMicroTime(Now.Add(-d/4))
	}
}

// Health is health.Paths of the reports for PathNet.
func Health(reports ...*v1beta1.PathReport) *health.PathHealth {
	return health.Paths(PathNet, reports)
}

// HealthyPaths is every named node's fresh report, nothing failing.
func HealthyPaths(nodes ...string) *health.PathHealth {
	rs := make([]*v1beta1.PathReport, len(nodes))
	for i, n := range nodes {
		rs[i] = PathReport(n)
	}
	return Health(rs...)
}
