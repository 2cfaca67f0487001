package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestAgentSilent is when a node's agent is silent, against its near misses: a round that
// finished a nanosecond before the bound and exactly at it, a slow first round and an overdue
// one, a report whose results are stale or unusable while its agent keeps finishing rounds
// (NeighbourTableFull, a replaced virt-handler, a problem written every round), a round stretched
// by the probe rate limit, and the local cluster's NotMeasured that nobody rewrites. The interval
// is 10 s: the bound SilentAfter(10 s) = 30 s. Node b's report is fresh throughout.
// Catches: silence judged from the last round only (an agent writing NeighbourTableFull every
// round, or a starting agent, called silent at once), a hard-coded interval (the stretched
// round), an off-by-one at the bound, a stale report called silent when its agent reports a
// problem every round, a silent node's own results still verifying its pairs, its peers' fresh
// failures towards it no longer counting.
func TestAgentSilent(t *testing.T) {
	const net = "kubevirt/vm-migration-network-abc"
	bound := SilentAfter(10 * time.Second)
	round := func(r *v1beta1.PathReport, completed time.Time) {
		r.LastRound = &v1beta1.ProbeRound{Started: metav1.NewMicroTime(completed.Add(-time.Second)), Completed: metav1.NewMicroTime(completed)}
	}
	a := func(edit func(r *v1beta1.PathReport)) *v1beta1.PathReport {
		r := report("a", net, t0, time.Time{})
		r.VirtHandlerUID = "a1"
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name   string
		a      *v1beta1.PathReport
		bLists bool // b's fresh report lists a as failing
		now    time.Time
		silent bool
		pair   PathState
		why    string
	}{
		{"a round a nanosecond before the bound", a(func(r *v1beta1.PathReport) { round(r, t0.Add(time.Second)) }), false,
			t0.Add(time.Second + bound - time.Nanosecond), false, PathVerified, ""},
		{"a round that finished exactly at the bound", a(func(r *v1beta1.PathReport) { round(r, t0.Add(time.Second)) }), false,
			t0.Add(time.Second + bound), true, PathUnverified, "a's probe agent is silent (AgentSilent): no round finished since 2026-11-25T12:00:01Z (bound 30s)"},
		{"a slow first round", a(func(*v1beta1.PathReport) {}), false,
			t0.Add(bound - time.Second), false, PathUnverified, "a's probe agent has not completed a round yet"},
		{"a first round overdue", a(func(*v1beta1.PathReport) {}), false,
			t0.Add(bound), true, PathUnverified, "a's probe agent is silent"},
		{"a round stretched by the rate limit", a(func(r *v1beta1.PathReport) { r.IntervalSeconds = 55; round(r, t0.Add(time.Second)) }), false,
			t0.Add(time.Second + bound + time.Minute), false, PathVerified, ""},
		{"an overflowed table: stale results, the agent finishing rounds", a(func(r *v1beta1.PathReport) {
			r.Problem = v1beta1.ProbeNeighbourTableFull
			round(r, t0.Add(time.Minute))
		}), false, t0.Add(time.Minute + bound - time.Second), false, PathUnverified, "a's probe agent cannot probe (NeighbourTableFull"},
		{"a problem written every round", a(func(r *v1beta1.PathReport) {
			r.Problem, r.Since = v1beta1.ProbeNoInterface, metav1.NewMicroTime(t0.Add(time.Hour))
		}), false, t0.Add(time.Hour + time.Second), false, PathUnverified, "a's probe agent cannot probe (NoInterface"},
		{"a problem no longer written", a(func(r *v1beta1.PathReport) { r.Problem = v1beta1.ProbeNoInterface }), false,
			t0.Add(bound), true, PathUnverified, "a's probe agent is silent"},
		{"a replaced virt-handler, the agent finishing rounds", a(func(r *v1beta1.PathReport) {
			r.VirtHandlerUID = "a0"
			round(r, t0.Add(time.Minute))
		}), false, t0.Add(time.Minute + time.Second), false, PathUnverified, "VirtHandlerReplaced"},
		{"not measured (the local cluster's simulated networks)", a(func(r *v1beta1.PathReport) { r.Problem = v1beta1.ProbeNotMeasured }), false,
			t0.Add(24 * time.Hour), false, PathUnverified, "a's paths are"},
		{"silent, and b's fresh report lists it", a(func(r *v1beta1.PathReport) { round(r, t0.Add(time.Second)) }), true,
			t0.Add(time.Hour), true, PathFailing, "no probe from b reaches a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := report("b", net, t0, tc.now.Add(-2*time.Second))
			if tc.bLists {
				b.Failing = []v1beta1.PeerPath{{Node: "a", Reason: v1beta1.PathUnreachable}}
			}
			b.VirtHandlerUID = "b1"
			h := Paths(net, CurrentReports([]*v1beta1.PathReport{tc.a, b}, map[types.UID]string{"a1": "a", "b1": "b"}))
			if got := h.Silent("a", tc.now); got != tc.silent {
				t.Errorf("Silent = %t, want %t", got, tc.silent)
			}
			if got := h.SilentNodes([]string{"b", "a"}, tc.now); (len(got) == 1) != tc.silent || h.Silent("b", tc.now) {
				t.Errorf("SilentNodes = %v, want a only when silent", got)
			}
			st, faults, why := h.Pair("a", "b", tc.now)
			if st != tc.pair {
				t.Fatalf("Pair = %v (%q), want %v", st, why, tc.pair)
			}
			if st == PathFailing {
				why = faults[0].Message()
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("why %q lacks %q", why, tc.why)
			}
		})
	}
}
