package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestProbeModel(t *testing.T) {
	def := func(peers int) prLoad { return probeModel(peers, 20*time.Second, time.Second, 3, 200, 9000) }
	for _, tc := range []struct {
		name           string
		got            prLoad
		spread, period time.Duration
		probes, pkts   float64
		mbit           float64
	}{
		// 2 × 99 probes over 15 s; 4 × 99 packets (2 probes + 2 answers) and 99 × 9,204 bytes a round.
		{"100 nodes", def(99), 15 * time.Second, 20 * time.Second, 13.2, 19.8, 0.3643},
		{"1000 nodes", def(999), 15 * time.Second, 20 * time.Second, 133.2, 199.8, 3.6784},
		// 2 × 1,500 probes at 200/s take exactly the 15 s left: max-rate starts to bind.
		{"1501 nodes", def(1500), 15 * time.Second, 20 * time.Second, 200, 300, 5.5224},
		// max-rate binds: the round takes 2 × 4,999 / 200 s, longer than the interval.
		{"5000 nodes", def(4999), 49990 * time.Millisecond, 49990 * time.Millisecond, 200, 400, 7.3632},
		{"alone", def(0), 15 * time.Second, 20 * time.Second, 0, 0, 0},
		// the budget exceeds the interval: probes all at once, a round every interval
		{"no spread", probeModel(10, 4*time.Second, 2*time.Second, 3, 0, 1500), 0, 4 * time.Second, math.Inf(1), 10, 0.0341},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.got
			if g.spread != tc.spread || g.period != tc.period {
				t.Errorf("spread %s, period %s; want %s, %s", g.spread, g.period, tc.spread, tc.period)
			}
			near := func(a, b float64) bool { return a == b || math.Abs(a-b) < 1e-3*max(math.Abs(b), 1e-3) }
			if !near(g.probesPerSec, tc.probes) || !near(g.pktsPerSec, tc.pkts) || !near(g.bitsPerSec/1e6, tc.mbit) {
				t.Errorf("%.4f probes/s, %.4f pkt/s, %.4f Mbit/s; want %.4f, %.4f, %.4f",
					g.probesPerSec, g.pktsPerSec, g.bitsPerSec/1e6, tc.probes, tc.pkts, tc.mbit)
			}
		})
	}
}

func TestStatusKiB(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(file, []byte("Name:\tbench\nVmPeak:\t  812345 kB\nVmHWM:\t   43328 kB\nVmRSS:\t   40000 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := statusKiB(file, "VmHWM:"); err != nil || got != 43328 {
		t.Errorf("VmHWM: %d, %v; want 43328", got, err)
	}
	if _, err := statusKiB(file, "VmSwap:"); err == nil {
		t.Error("VmSwap: no error for a missing field")
	}
}
