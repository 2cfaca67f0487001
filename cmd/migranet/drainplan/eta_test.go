package drainplan

import (
	"testing"
	"time"
)

const mib = 1 << 20

func TestEstimateStream(t *testing.T) {
	base := Options{CompletionTimeoutPerGiB: 150, ProgressTimeout: 150}
	post := base
	post.AllowPostCopy, post.AllowWorkloadDisruption = true, true
	pause := base
	pause.AllowWorkloadDisruption = true
	auto := base
	auto.AllowAutoConverge = true
	for _, tc := range []struct {
		name              string
		memory, dirty, bw int64
		o                 Options
		outcome           string
		converges         bool
		min, max          time.Duration
	}{
		{"an idle guest: one round", 1024 * mib, 0, 64 * mib, base, Converges, true, 16 * time.Second, 16 * time.Second},
		{"a guest dirtying a quarter of the throughput", 1024 * mib, 16 * mib, 64 * mib, base, Converges, true, 21 * time.Second, 22 * time.Second},
		// The near miss: the dirty rate equals the throughput. Every round is as large as the
		// first; only the completion timeout (150 s × 2 GB) ends it.
		{"dirty rate equal to the throughput: aborted", 1024 * mib, 64 * mib, 64 * mib, base, Aborted, false, 300 * time.Second, 300 * time.Second},
		{"dirty rate equal to the throughput, post-copy allowed", 1024 * mib, 64 * mib, 64 * mib, post, PostCopy, false, 300 * time.Second, 332 * time.Second},
		{"dirty rate equal to the throughput, workload disruption without post-copy", 1024 * mib, 64 * mib, 64 * mib, pause, Paused, false, 300 * time.Second, 332 * time.Second},
		{"dirty rate above the throughput, auto-converge", 1024 * mib, 96 * mib, 64 * mib, auto, Converges, false, 30 * time.Second, 300 * time.Second},
		{"dirty rate just below the throughput: converges too slowly for the timeout", 1024 * mib, 63 * mib, 64 * mib, base, Aborted, true, 300 * time.Second, 300 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := EstimateStream(tc.memory, tc.dirty, tc.bw, tc.o)
			if e.Outcome != tc.outcome || e.Converges != tc.converges {
				t.Errorf("outcome %s (pre-copy converges %v), want %s (%v): %+v", e.Outcome, e.Converges, tc.outcome, tc.converges, e)
			}
			if e.Stream < tc.min || e.Stream > tc.max {
				t.Errorf("stream %s, want within [%s, %s]", e.Stream, tc.min, tc.max)
			}
			if (e.Outcome == Converges) == (e.Advice != "") {
				t.Errorf("advice %q for outcome %s", e.Advice, e.Outcome)
			}
		})
	}
}

func TestInvertThroughput(t *testing.T) {
	o := Options{CompletionTimeoutPerGiB: 150}
	for _, tc := range []struct {
		name          string
		memory, dirty int64
		bw            int64
	}{
		{"idle", 512 * mib, 0, 32 * mib},
		{"dirtying", 512 * mib, 8 * mib, 32 * mib},
		{"dirtying hard", 1024 * mib, 24 * mib, 32 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := EstimateStream(tc.memory, tc.dirty, tc.bw, o)
			got, ok := InvertThroughput(tc.memory, tc.dirty, e.Stream, o)
			if !ok || got < tc.bw*99/100 || got > tc.bw*101/100 {
				t.Errorf("InvertThroughput = %s, %v; want %s within 1%%", Rate(got), ok, Rate(tc.bw))
			}
		})
	}
	// Without a dirty rate the memory over the time is all that is known: a lower bound.
	if got, _ := InvertThroughput(512*mib, 0, 20*time.Second, o); got != 512*mib/20 {
		t.Errorf("no dirty rate: %d, want %d", got, 512*mib/20)
	}
	if _, ok := InvertThroughput(512*mib, 0, 0, o); ok {
		t.Error("a zero time explains no throughput")
	}
}

func TestDataGB(t *testing.T) {
	for mem, want := range map[int64]int64{1: 1, 1_000_000_000: 1, 1_000_000_001: 2, 1 << 30: 2} {
		if got := DataGB(mem); got != want {
			t.Errorf("DataGB(%d) = %d, want %d", mem, got, want)
		}
	}
}
