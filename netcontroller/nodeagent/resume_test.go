package nodeagent

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestResume: what a restarted agent keeps of its node's last report, against its near misses.
// The report's interval is 4 s: stale SilentAfter(4 s) = 12 s after its last round.
// Catches: a report of another virt-handler pod, address or network resumed (results of another
// interface kept), a report resumed at or past its staleness bound (an off-by-one keeps a verdict
// the manager no longer trusts), a problem report or one without a round since its since
// resumed, and the failures' start lost (a restart making an old failure look new to the abort
// rule).
func TestResume(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	began := metav1.NewMicroTime(t0.Add(-time.Hour))
	addr := netip.MustParseAddr("10.78.0.5")
	const net, pod = "kubevirt/vm-migration-network-abc", "vh-1"
	last := func(edit func(*v1beta1.PathReport)) *v1beta1.PathReport {
		r := &v1beta1.PathReport{Network: net, VirtHandlerUID: pod, Address: "10.78.0.5", IntervalSeconds: 4,
			Since:     metav1.NewMicroTime(t0.Add(-10 * time.Minute)),
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(t0.Add(-2 * time.Second)), Completed: metav1.NewMicroTime(t0.Add(-time.Second))},
			Failing:   []v1beta1.PeerPath{{Node: "node-3", Reason: v1beta1.PathMTU, Largest: 1400, Since: &began}}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *v1beta1.PathReport
		now  time.Time
		ok   bool
	}{
		{"the same pod and address, fresh", last(nil), t0, true},
		{"a nanosecond before stale", last(nil), t0.Add(11*time.Second - time.Nanosecond), true},
		{"exactly stale", last(nil), t0.Add(11 * time.Second), false},
		{"another virt-handler pod", last(func(r *v1beta1.PathReport) { r.VirtHandlerUID = "vh-0" }), t0, false},
		{"no pod named (an agent before the field)", last(func(r *v1beta1.PathReport) { r.VirtHandlerUID = "" }), t0, false},
		{"another address", last(func(r *v1beta1.PathReport) { r.Address = "10.78.0.6" }), t0, false},
		{"another network", last(func(r *v1beta1.PathReport) { r.Network = "kubevirt/vm-migration-network-old" }), t0, false},
		{"a problem", last(func(r *v1beta1.PathReport) { r.Problem = v1beta1.ProbeNeighbourTableFull }), t0, false},
		{"no round yet", last(func(r *v1beta1.PathReport) { r.LastRound = nil }), t0, false},
		{"its round began before its since", last(func(r *v1beta1.PathReport) { r.Since = metav1.NewMicroTime(t0) }), t0, false},
		{"no interval", last(func(r *v1beta1.PathReport) { r.IntervalSeconds = 0 }), t0, false},
		{"none", nil, t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Resume(tc.r, net, pod, addr, tc.now)
			if ok != tc.ok {
				t.Fatalf("Resume ok = %t, want %t", ok, tc.ok)
			}
			if !ok {
				return
			}
			if !got.Since.Equal(tc.r.Since.Time) {
				t.Errorf("since %v, want the report's %v", got.Since, tc.r.Since.Time)
			}
			if !got.Seen.Equal(tc.r.LastRound.Started.Time) {
				t.Errorf("seen %v, want the last round's start %v: the next round would not carry the failures on", got.Seen, tc.r.LastRound.Started.Time)
			}
			p, found := got.Failing["node-3"]
			if !found || p.Since == nil || !p.Since.Equal(&began) || p.Reason != v1beta1.PathMTU || p.Largest != 1400 {
				t.Errorf("failing %+v, want node-3's MTU failure since %v", got.Failing, began)
			}
		})
	}
}
