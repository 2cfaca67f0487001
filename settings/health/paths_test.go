package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// report is node's report on net: probing since `since`, last round [started, started+1s].
func report(node, net string, since, started time.Time, failing ...v1beta1.PeerPath) *v1beta1.PathReport {
	r := &v1beta1.PathReport{Network: net, IntervalSeconds: 10, MTU: 9000, Since: metav1.NewMicroTime(since), Failing: failing}
	r.Name = node
	if !started.IsZero() {
		r.LastRound = &v1beta1.ProbeRound{Started: metav1.NewMicroTime(started), Completed: metav1.NewMicroTime(started.Add(time.Second))}
	}
	return r
}

func TestPathPair(t *testing.T) {
	const net = "kubevirt/vm-migration-network-abc"
	mtu := v1beta1.PeerPath{Node: "b", Reason: v1beta1.PathMTU, Largest: 1500}
	tests := []struct {
		name    string
		reports []*v1beta1.PathReport
		now     time.Time
		want    PathState
		why     string // substring of the reason (unverified) or of the first fault's message
	}{
		{"both fresh, covered", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), report("b", net, t0, t0.Add(time.Second))}, t0.Add(5 * time.Second), PathVerified, ""},
		{"a lists b for MTU", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second), mtu), report("b", net, t0, t0.Add(time.Second))}, t0.Add(5 * time.Second), PathFailing, "9000-byte frames from a to b do not arrive (largest that crossed: 1500)"},
		{"b lists a (the reverse direction fails the pair too)", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), report("b", net, t0, t0.Add(time.Second), v1beta1.PeerPath{Node: "a", Reason: v1beta1.PathUnreachable})}, t0.Add(5 * time.Second), PathFailing, "no probe from b reaches a"},
		{"a's failing report is stale: unverified, not failing", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second), mtu), report("b", net, t0, t0.Add(time.Minute))}, t0.Add(time.Minute + 5*time.Second), PathUnverified, "a's probe agent is silent (AgentSilent)"},
		{"b never reported", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second))}, t0.Add(5 * time.Second), PathUnverified, "b's probe agent has not reported"},
		{"b reported another network", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), report("b", "kubevirt/old", t0, t0.Add(time.Second))}, t0.Add(5 * time.Second), PathUnverified, "b's probe agent has not reported"},
		{"b has not completed a round", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), report("b", net, t0, time.Time{})}, t0.Add(5 * time.Second), PathUnverified, "not completed a round"},
		{"b joined after a's round started", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), report("b", net, t0.Add(2*time.Second), t0.Add(3*time.Second))}, t0.Add(5 * time.Second), PathUnverified, "a has not probed b yet"},
		{"b's agent has a problem", []*v1beta1.PathReport{report("a", net, t0, t0.Add(time.Second)), func() *v1beta1.PathReport {
			r := report("b", net, t0, t0.Add(time.Second))
			r.Problem, r.Message = v1beta1.ProbeNoInterface, "no migration0"
			return r
		}()}, t0.Add(5 * time.Second), PathUnverified, "cannot probe (NoInterface"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Paths(net, tt.reports)
			got, faults, why := h.Pair("a", "b", tt.now)
			if got != tt.want {
				t.Fatalf("Pair = %v (%v, %q), want %v", got, faults, why, tt.want)
			}
			if got == PathFailing {
				why = faults[0].Message()
			}
			if !strings.Contains(why, tt.why) {
				t.Errorf("reason %q lacks %q", why, tt.why)
			}
			if back, _, _ := h.Pair("b", "a", tt.now); back != got {
				t.Errorf("Pair(b, a) = %v, Pair(a, b) = %v: a pair is judged the same both ways", back, got)
			}
		})
	}
}

// TestPathSummaryCountsAsPairsDo checks Summary's counts, computed without walking the pairs,
// against Pair over every pair, on random reports.
func TestPathSummaryCountsAsPairsDo(t *testing.T) {
	const net = "kubevirt/n"
	names := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}
	for seed := 0; seed < 300; seed++ {
		rnd := uint64(seed)*2654435761 + 1
		next := func(k int) int { rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17; return int(rnd % uint64(k)) }
		var reports []*v1beta1.PathReport
		for _, n := range names {
			if next(6) == 0 {
				continue // never reported
			}
			since := t0.Add(time.Duration(next(20)) * time.Second)
			started := since.Add(time.Duration(next(20)-3) * time.Second) // now and then before since
			var failing []v1beta1.PeerPath
			for _, p := range names {
				if p != n && next(8) == 0 {
					failing = append(failing, v1beta1.PeerPath{Node: p, Reason: v1beta1.PathUnreachable})
				}
			}
			reports = append(reports, report(n, net, since, started, failing...))
		}
		h := Paths(net, reports)
		now := t0.Add(time.Duration(20+next(40)) * time.Second)
		attached := names[:2+next(len(names)-1)]
		var want [3]int
		for i, a := range attached {
			for _, b := range attached[i+1:] {
				st, _, _ := h.Pair(a, b, now)
				want[st]++
			}
		}
		got := h.Summary(attached, now)
		if int(got.Verified) != want[PathVerified] || int(got.Unverified) != want[PathUnverified] || int(got.Failing) != want[PathFailing] {
			t.Fatalf("seed %d: Summary verified/unverified/failing = %d/%d/%d, Pair over every pair %v", seed, got.Verified, got.Unverified, got.Failing, want)
		}
	}
}
