package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// sample is one look of the monitor: at (since the start), the job's remaining bytes, the mode.
type sample struct {
	at        time.Duration
	remaining uint64
	mode      kubevirtv1.MigrationMode
}

// TestMonitor follows KubeVirt v1.8.4's processInflightMigration
// (pkg/virt-launcher/virtwrap/live-migration-source.go) one look at a time.
// Catches: progress counted on an equal or rising sample (a stalled stream never aborted), the
// progress timeout compared in fractions of seconds or with >= (aborted a look early, or its
// text naming another figure), the completion timeout not scaled by the data size, a post-copy
// migration aborted (the VM's state lost), a disruptive migration aborted instead of switched or
// paused, a paused one switched again, either timeout applied when configured 0.
func TestMonitor(t *testing.T) {
	const mi = 1 << 20
	pre, post := kubevirtv1.MigrationPreCopy, kubevirtv1.MigrationPostCopy
	stalled := func(until time.Duration, mode kubevirtv1.MigrationMode) []sample {
		var out []sample
		for at := MonitorSleepPeriod; at <= until; at += MonitorSleepPeriod {
			out = append(out, sample{at, 100 * mi, mode})
		}
		return out
	}
	falling := func(until time.Duration) []sample {
		var out []sample
		r := uint64(1 << 40)
		for at := MonitorSleepPeriod; at <= until; at += MonitorSleepPeriod {
			out = append(out, sample{at, r, pre})
			r -= mi
		}
		return out
	}
	cases := []struct {
		name    string
		opts    MigrationOptions
		gb      int64
		samples []sample
		// want is the first action other than MonitorContinue, the look it came at (0: none).
		want   MonitorAction
		wantAt time.Duration
		reason string
	}{
		{name: "stalled: aborted once more than progressTimeout whole seconds passed", opts: MigrationOptions{ProgressTimeout: 5}, gb: 1,
			// The first look (0.4 s) is progress; 6 whole seconds after it is more than 5.
			samples: stalled(10*time.Second, pre), want: MonitorAbort, wantAt: 6400 * time.Millisecond,
			reason: "Live migration stuck for 6 seconds and has been aborted"},
		{name: "stalled, default timeout: not yet after 100 s", opts: OptionsFrom(nil), gb: 1, samples: stalled(100*time.Second, pre)},
		{name: "stalled, progress timeout 0: never stuck", opts: MigrationOptions{CompletionTimeoutPerGiB: 20}, gb: 1,
			samples: stalled(30*time.Second, pre), want: MonitorAbort, wantAt: 21200 * time.Millisecond,
			reason: "Live migration is not completed after 20 seconds and has been aborted"},
		{name: "progressing: only the completion timeout, scaled by the data size", opts: MigrationOptions{ProgressTimeout: 2, CompletionTimeoutPerGiB: 3}, gb: 4,
			samples: falling(20 * time.Second), want: MonitorAbort, wantAt: 13200 * time.Millisecond,
			reason: "Live migration is not completed after 12 seconds and has been aborted"},
		{name: "both off", opts: MigrationOptions{}, gb: 1, samples: stalled(30*time.Second, pre)},
		{name: "post-copy is never aborted", opts: MigrationOptions{ProgressTimeout: 1, CompletionTimeoutPerGiB: 1}, gb: 1,
			samples: stalled(20*time.Second, post)},
		{name: "disruption allowed with post-copy: switched past the completion time", opts: MigrationOptions{ProgressTimeout: 100,
			CompletionTimeoutPerGiB: 2, AllowPostCopy: true, AllowWorkloadDisruption: true}, gb: 1,
			samples: falling(10 * time.Second), want: MonitorStartPostCopy, wantAt: 3200 * time.Millisecond},
		{name: "disruption allowed without post-copy: paused", opts: MigrationOptions{ProgressTimeout: 100,
			CompletionTimeoutPerGiB: 2, AllowWorkloadDisruption: true}, gb: 1,
			samples: falling(10 * time.Second), want: MonitorPause, wantAt: 3200 * time.Millisecond},
		{name: "post-copy allowed but no disruption: aborted", opts: MigrationOptions{ProgressTimeout: 100,
			CompletionTimeoutPerGiB: 2, AllowPostCopy: true}, gb: 1,
			samples: falling(10 * time.Second), want: MonitorAbort, wantAt: 3200 * time.Millisecond,
			reason: "Live migration is not completed after 2 seconds and has been aborted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			m := NewMonitor(tc.opts, tc.gb, start)
			var got MonitorAction
			var at time.Duration
			reason := ""
			for _, s := range tc.samples {
				if a, r := m.Observe(start.Add(s.at), s.remaining, s.mode); a != MonitorContinue {
					got, at, reason = a, s.at, r
					break
				}
			}
			if got != tc.want || at != tc.wantAt || reason != tc.reason {
				t.Fatalf("got action %d at %s (%q), want %d at %s (%q)", got, at, reason, tc.want, tc.wantAt, tc.reason)
			}
		})
	}
}

// TestMonitorPausedTwiceTheTime: a paused guest gets twice the completion time before it is
// aborted (acceptableCompletionTime *= 2), and is not paused again.
// Catches: a paused migration aborted at the first completion time, or paused over and over.
func TestMonitorPausedTwiceTheTime(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewMonitor(MigrationOptions{CompletionTimeoutPerGiB: 2, AllowWorkloadDisruption: true}, 1, start)
	mode := kubevirtv1.MigrationPreCopy
	var actions []string
	r := uint64(1 << 30)
	for at := MonitorSleepPeriod; at <= 10*time.Second; at += MonitorSleepPeriod {
		r--
		a, reason := m.Observe(start.Add(at), r, mode)
		switch a {
		case MonitorPause:
			mode = kubevirtv1.MigrationPaused
			actions = append(actions, "pause at "+at.String())
		case MonitorAbort:
			actions = append(actions, reason+" at "+at.String())
		}
		if a == MonitorAbort {
			break
		}
	}
	want := []string{"pause at 3.2s", "Live migration is not completed after 4 seconds and has been aborted at 5.2s"}
	if len(actions) != len(want) || actions[0] != want[0] || actions[1] != want[1] {
		t.Fatalf("got %q, want %q", actions, want)
	}
}

// TestOptionsAndDataSize: the monitor's inputs as virt-handler and virt-launcher read them.
// Catches: KubeVirt's defaults wrong (150 s, 150 s/GiB), AllowWorkloadDisruption not defaulting to
// AllowPostCopy, the data size in GiB or rounded down, the guest memory not preferred to the request.
func TestOptionsAndDataSize(t *testing.T) {
	if o := OptionsFrom(nil); o != (MigrationOptions{ProgressTimeout: 150, CompletionTimeoutPerGiB: 150}) {
		t.Errorf("defaults: %+v", o)
	}
	yes, five, bw := true, int64(5), resource.MustParse("64Mi")
	o := OptionsFromVMIM(&kubevirtv1.VMIMConfigurationOptions{ProgressTimeout: &five, AllowPostCopy: &yes, BandwidthPerMigration: &bw})
	if o != (MigrationOptions{ProgressTimeout: 5, CompletionTimeoutPerGiB: 150, AllowPostCopy: true, AllowWorkloadDisruption: true, Bandwidth: 64 << 20}) {
		t.Errorf("from the VMI: %+v", o)
	}
	for q, want := range map[string]int64{"128Mi": 1, "1G": 1, "1Gi": 2, "2000M": 2, "2001M": 3, "0": 0} {
		if got := MigrationDataGB(resource.MustParse(q)); got != want {
			t.Errorf("MigrationDataGB(%s) = %d, want %d", q, got, want)
		}
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{"memory": resource.MustParse("128Mi"), "cpu": resource.MustParse("3")}
	if m := GuestMemory(vmi); m.Value() != 128<<20 {
		t.Errorf("requests: %s", m.String())
	}
	guest := resource.MustParse("1Gi")
	vmi.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: &guest}
	if m := GuestMemory(vmi); m.Value() != 1<<30 {
		t.Errorf("guest: %s", m.String())
	}
}

// TestNextRound is the pre-copy's round accounting.
// Catches: dirty memory above the guest's size, a round that never converges although it fits the
// downtime, one that converges although it does not, a held migration converging, a stopped
// guest (post-copy, paused) still dirtying.
func TestNextRound(t *testing.T) {
	const mi = 1 << 20
	p := StreamPlan{Memory: 128 * mi, DirtyRate: 8 * mi, Bandwidth: 64 * mi}
	cases := []struct {
		name          string
		plan          StreamPlan
		sent          int64
		d             time.Duration
		hold, stopped bool
		next          int64
		last          bool
	}{
		{"first round at 64 Mi/s: 16 Mi dirty fits 300 ms (19.2 Mi)", p, 128 * mi, 2 * time.Second, false, false, 16 * mi, true},
		{"dirtier guest: 32 Mi does not fit", StreamPlan{Memory: 128 * mi, DirtyRate: 16 * mi}, 128 * mi, 2 * time.Second, false, false, 32 * mi, false},
		{"dirtied more than the memory", StreamPlan{Memory: 128 * mi, DirtyRate: 1 << 40}, 128 * mi, 2 * time.Second, false, false, 128 * mi, false},
		{"no dirty rate: done", StreamPlan{Memory: 128 * mi}, 128 * mi, 2 * time.Second, false, false, 0, true},
		{"held: the same again", p, 128 * mi, 2 * time.Second, true, false, 128 * mi, false},
		{"post-copy or paused: what is dirty, last", StreamPlan{Memory: 128 * mi, DirtyRate: 64 * mi}, 128 * mi, time.Second, true, true, 64 * mi, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, last := tc.plan.NextRound(tc.sent, tc.d, tc.hold, tc.stopped)
			if next != tc.next || last != tc.last {
				t.Fatalf("NextRound = %d, %t; want %d, %t", next, last, tc.next, tc.last)
			}
		})
	}
}
