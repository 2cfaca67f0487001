package nodeagent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Faults caught: Since reset by a wandering largest frame (an old MTU failure read as new by the
// abort rule), Since kept across a change of reason (a link that went down on a path with an old
// MTU fault read as old), Since reset when Unreachable and OneWay alternate on a path that drops
// what this node sends (seen in CI: a migration admitted at warn over a failing path aborted when
// the peer's probes missed one round), Since stamped at the round's start or when its results were read instead
// of when the probe that found the failure went out, a first check's failure marked as after a
// check (a restarted agent's first look read as new), AfterCheck lost while the failure goes on.
func TestFailingSince(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	first := metav1.NewMicroTime(t0)
	probed := metav1.NewMicroTime(t0.Add(12 * time.Second))
	mtu := v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathMTU, Largest: 1400, Since: &first, AfterCheck: true}
	oneWay := v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathOneWay, Since: &first, AfterCheck: true}
	unreachable := v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathUnreachable, Since: &first, AfterCheck: true}
	for _, tc := range []struct {
		name              string
		prev              v1beta1.PeerPath
		was, checked      bool
		reason            string
		want              time.Time
		afterCheck, isNew bool
	}{
		{"still failing the same way: the first failing probe's time, after a check as before", mtu, true, true, v1beta1.PathMTU, t0, true, false},
		{"still failing, first found by a first check: still not after a check", func() v1beta1.PeerPath { p := mtu; p.AfterCheck = false; return p }(), true, true, v1beta1.PathMTU, t0, false, false},
		{"near miss: the same reason, another largest frame: still the first failing probe's", func() v1beta1.PeerPath { p := mtu; p.Largest = 1450; return p }(), true, true, v1beta1.PathMTU, t0, true, false},
		{"near miss: another reason (the link went down): this probe's time, after the check that saw MTU", mtu, true, true, v1beta1.PathUnreachable, probed.Time, true, true},
		{"near miss: Unreachable after OneWay (the peer's probes did not arrive this round): still the first failing probe's", oneWay, true, true, v1beta1.PathUnreachable, t0, true, false},
		{"OneWay after Unreachable: still the first failing probe's", unreachable, true, true, v1beta1.PathOneWay, t0, true, false},
		{"MTU after Unreachable (the path got better): still the first failing probe's", unreachable, true, true, v1beta1.PathMTU, t0, true, false},
		{"near miss: OneWay after MTU (worse): this probe's time", mtu, true, true, v1beta1.PathOneWay, probed.Time, true, true},
		{"near miss: a reason this agent does not know after Unreachable: this probe's time", unreachable, true, true, "Corrupted", probed.Time, true, true},
		{"passing in the previous round: this probe's time, after that check", v1beta1.PeerPath{}, false, true, v1beta1.PathMTU, probed.Time, true, true},
		{"near miss: the first check of the peer: this probe's time, not after a check", v1beta1.PeerPath{}, false, false, v1beta1.PathMTU, probed.Time, false, true},
		{"an entry without a Since (an agent before the field): this probe's time", func() v1beta1.PeerPath { p := mtu; p.Since = nil; return p }(), true, true, v1beta1.PathMTU, probed.Time, true, true},
		{"an entry with a zero Since: this probe's time", func() v1beta1.PeerPath { p := mtu; p.Since = &metav1.MicroTime{}; return p }(), true, true, v1beta1.PathMTU, probed.Time, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, afterCheck, isNew := FailingSince(tc.prev, tc.was, tc.checked, tc.reason, probed)
			if got == nil || !got.Time.Equal(tc.want) || afterCheck != tc.afterCheck || isNew != tc.isNew {
				t.Fatalf("since %v afterCheck %v new %v, want %v %v %v", got, afterCheck, isNew, tc.want, tc.afterCheck, tc.isNew)
			}
			if tc.prev.Since != nil && got == tc.prev.Since {
				t.Errorf("the previous report's Since is shared, not copied")
			}
		})
	}
}

// Faults caught: a failure kept across a gap the agent did not watch (held, hung: the path may
// have been repaired and broken again, and the abort rule would read the new break as old), a
// first round treated as watched.
func TestWatched(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	const interval = 20 * time.Second
	for _, tc := range []struct {
		name        string
		seen, start time.Time
		interval    time.Duration
		want        bool
	}{
		{"the next round", t0, t0.Add(interval), interval, true},
		{"at the silence bound (three intervals)", t0, t0.Add(3 * interval), interval, true},
		{"near miss: a nanosecond past it (the agent was held)", t0, t0.Add(3*interval + time.Nanosecond), interval, false},
		{"no round before", time.Time{}, t0, interval, false},
		{"no interval named", t0, t0.Add(time.Second), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Watched(tc.seen, tc.start, tc.interval); got != tc.want {
				t.Errorf("Watched = %v, want %v", got, tc.want)
			}
		})
	}
}
