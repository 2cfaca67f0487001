package nodeagent

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Faults caught: a peer left out of one round (its agent not Ready at the round's start, seen in
// CI as a break never aborted) read as never checked, so a break found on its return has no
// known beginning; the same peer's old failure read as new on its return (its Since reset: a
// failure known before a migration would abort it); a check older than the silence bound kept
// (the path may have been repaired and broken again unseen); a check of the peer's old address
// kept for its new one; a resumed report's peers forgotten, or kept past a round that judged
// others.
func TestMemory(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	const interval = 4 * time.Second
	round := func(i int) time.Time { return t0.Add(time.Duration(i) * interval) }
	addr := netip.MustParseAddr("192.168.100.12")
	moved := netip.MustParseAddr("192.168.100.13")
	since := metav1.NewMicroTime(t0.Add(time.Second))
	fails := v1beta1.PeerPath{Node: "n2", Address: addr.String(), Reason: v1beta1.PathMTU, Since: &since, AfterCheck: true}
	res := func(a netip.Addr, reason string) []Result {
		return []Result{{Peer: Peer{Node: "n2", Addr: netip.AddrPortFrom(a, 4790)}, Reason: reason}}
	}
	// passes, failing and skipped are rounds as the agent records them.
	type rec struct {
		results []Result
		failing map[string]v1beta1.PeerPath
	}
	passes := rec{results: res(addr, "")}
	failing := rec{results: res(addr, v1beta1.PathMTU), failing: map[string]v1beta1.PeerPath{"n2": fails}}
	skipped := rec{}
	for _, tc := range []struct {
		name    string
		resumed *Resumed
		rounds  []rec
		at      time.Time // the judged round's start
		addr    netip.Addr
		was     bool
		checked bool
	}{
		{"passed the round before", nil, []rec{passes}, round(1), addr, false, true},
		{"failing the round before: its entry", nil, []rec{failing}, round(1), addr, true, true},
		{"near miss: left out of the round before after a pass: still checked", nil, []rec{passes, skipped}, round(2), addr, false, true},
		{"near miss: left out of the round before while failing: the old failure goes on", nil, []rec{failing, skipped}, round(2), addr, true, true},
		{"passed, then failing: failing", nil, []rec{passes, failing}, round(2), addr, true, true},
		{"failing, then passed: a check, no failure", nil, []rec{failing, passes}, round(2), addr, false, true},
		{"at the silence bound: still checked", nil, []rec{passes}, round(3), addr, false, true},
		{"near miss: a nanosecond past the bound (held, or away that long): none", nil, []rec{passes}, round(3).Add(time.Nanosecond), addr, false, false},
		{"near miss: failing, a nanosecond past the bound: forgotten", nil, []rec{failing}, round(3).Add(time.Nanosecond), addr, false, false},
		{"near miss: the peer's virt-handler moved to another address: none", nil, []rec{passes}, round(1), moved, false, false},
		{"never checked", nil, nil, round(1), addr, false, false},
		{"resumed, not listed: passed in the resumed round", &Resumed{Seen: round(0), Failing: map[string]v1beta1.PeerPath{}}, nil, round(1), addr, false, true},
		{"resumed, listed: its entry", &Resumed{Seen: round(0), Failing: map[string]v1beta1.PeerPath{"n2": fails}}, nil, round(1), addr, true, true},
		{"near miss: resumed round past the bound: none", &Resumed{Seen: round(0), Failing: map[string]v1beta1.PeerPath{"n2": fails}}, nil, round(3).Add(time.Nanosecond), addr, false, false},
		{"near miss: resumed, then a round that left the peer out: the resumed round no longer covers it", &Resumed{Seen: round(0), Failing: map[string]v1beta1.PeerPath{}}, []rec{skipped}, round(2), addr, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			if tc.resumed != nil {
				m.Resume(*tc.resumed)
			}
			for i, r := range tc.rounds {
				start := round(i)
				if tc.resumed != nil {
					start = round(i + 1)
				}
				m.Record(r.results, r.failing, start, interval)
			}
			prev, was, checked := m.Before("n2", tc.addr, tc.at, interval)
			if was != tc.was || checked != tc.checked {
				t.Fatalf("was %v checked %v, want %v %v", was, checked, tc.was, tc.checked)
			}
			if was && (prev.Since == nil || !prev.Since.Equal(&since) || prev.Reason != v1beta1.PathMTU) {
				t.Errorf("prev %+v, want the failing entry", prev)
			}
			if !was && prev.Reason != "" {
				t.Errorf("prev %+v without a failure", prev)
			}
		})
	}
}
