package nodenet_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/test/nodenet"
)

// BenchmarkAgentNeighbourEntries measures the neighbour entries one agent's probing holds in
// its namespace, with 100 and 1,000 peers in network namespaces on one bridge, a round spread
// over 15 s (the default --interval 20s less a failing check's budget), every peer checking the
// agent once during it, in the steady state (the second round): entries-peak (sampled every
// 10 ms), entries-end (a grace after the round), removals, the ARP requests a bystander on the
// bridge receives (broadcasts: what removing costs every node on the segment), failed checks,
// and the process's CPU per round (every peer's prober included). Modes: kept (one entry per
// peer), removed beyond the cap the agent takes on the default thresholds (96 of 128/512/1024),
// removed without a cap. Run with -benchtime=1x; it raises the machine's IPv4 thresholds to
// 4096/8192/16384 (never lowers them) for the peers' own entries.
func BenchmarkAgentNeighbourEntries(b *testing.B) {
	ctx := context.Background()
	if _, _, err := nodenet.RaiseNeighbourLimits(true, nodeagent.NeighbourLimits{GCThresh1: 4096, GCThresh2: 8192, GCThresh3: 16384}); err != nil {
		b.Fatal(err)
	}
	for _, peers := range []int{100, 1000} {
		m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mnb%d", os.Getpid()), peers+2, 1500, false)
		if err != nil {
			b.Fatal(err)
		}
		ps := meshProbers(b, m, time.Second)
		arp, err := arpRequests(ctx, m.NS(peers+1))
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name   string
			remove bool
			cap    int
		}{{"kept", false, 0}, {fmt.Sprintf("removed-beyond-%d", nodeagent.DefaultNeighbourLimits.Cap()), true, nodeagent.DefaultNeighbourLimits.Cap()}, {"removed-all", true, 0}} {
			b.Run(fmt.Sprintf("peers=%d/%s", peers, mode.name), func(b *testing.B) {
				ps[0].SetNeighbourCap(mode.cap)
				if mode.remove {
					ps[0].RemoveNeighbours(nodeagent.DefaultNeighbourGrace)
				}
				var peak, end, failed, broadcasts int
				var removed uint64
				var cpu time.Duration
				for range b.N {
					agentRound(b, m, ps, peers, 15*time.Second) // resolves, or settles after the last mode
					var r0, r1 unix.Rusage
					_ = unix.Getrusage(unix.RUSAGE_SELF, &r0)
					a0 := arp()
					p, e, f, r := agentRound(b, m, ps, peers, 15*time.Second)
					broadcasts += arp() - a0
					_ = unix.Getrusage(unix.RUSAGE_SELF, &r1)
					cpu += time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
					peak, end, failed, removed = max(peak, p), max(end, e), failed+f, removed+r
				}
				b.ReportMetric(float64(peak), "entries-peak")
				b.ReportMetric(float64(end), "entries-end")
				b.ReportMetric(float64(removed)/float64(b.N), "removals/round")
				b.ReportMetric(float64(broadcasts)/float64(b.N), "arp-broadcasts/round")
				b.ReportMetric(float64(failed)/float64(b.N), "failed/round")
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/round")
			})
		}
		for _, p := range ps {
			p.Close()
		}
		m.Close()
	}
}

// BenchmarkLabVerdicts is the proving ground's verdicts at 40 and 100 nodes: every node's
// sandbox probes every other's at once (the agents' prober, defaults --timeout 1s --tries 3),
// the round spread over 10 s per 40 nodes, first with the kernel's default neighbour thresholds
// (128/512/1024: set for the run, the machine's own set back after), then sized by
// nodenet.SizeNeighbourTables. It reports the pairs with a failing direction (every link is up:
// each is false), the failing checks, the overflows the kernel counted, and how many agents
// would withhold their round (nodeagent.Untrusted: NeighbourTableFull instead of the failures).
// Run with -benchtime=1x.
func BenchmarkLabVerdicts(b *testing.B) {
	ctx := context.Background()
	dir4 := nodenet.SysctlRoot + "/" + nodeagent.SysctlDir(true)
	orig, err := nodeagent.ReadNeighbourLimits(dir4)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cur, _ := nodeagent.ReadNeighbourLimits(dir4)
		back := nodeagent.NeighbourLimits{GCThresh1: max(cur.GCThresh1, orig.GCThresh1), GCThresh2: max(cur.GCThresh2, orig.GCThresh2), GCThresh3: max(cur.GCThresh3, orig.GCThresh3)}
		if err := nodenet.WriteNeighbourLimits(true, cur, back); err != nil {
			b.Error(err)
		}
	}()
	for _, n := range []int{40, 100} {
		m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mnv%d", os.Getpid()), n, 1500, false)
		if err != nil {
			b.Fatal(err)
		}
		ps := meshProbers(b, m, time.Second)
		for _, sized := range []bool{false, true} {
			name := map[bool]string{false: "defaults", true: "sized"}[sized]
			b.Run(fmt.Sprintf("nodes=%d/%s", n, name), func(b *testing.B) {
				for range b.N {
					for i := range n {
						if _, err := nodenet.Exec(ctx, m.NS(i), "ip", "neigh", "flush", "dev", "migration0"); err != nil {
							b.Fatal(err)
						}
					}
					cur, err := nodeagent.ReadNeighbourLimits(dir4)
					if err != nil {
						b.Fatal(err)
					}
					if sized {
						if err := nodenet.WriteNeighbourLimits(true, cur, orig); err != nil {
							b.Fatal(err)
						}
						if err := nodenet.SizeNeighbourTables(n, os.Stderr); err != nil {
							b.Fatal(err)
						}
					} else if err := nodenet.WriteNeighbourLimits(true, cur, nodeagent.DefaultNeighbourLimits); err != nil {
						b.Fatal(err)
					}
					o0, _ := nodenet.NeighbourOverflows()
					res, failed := allPairs(ctx, m, ps, time.Duration(n)*250*time.Millisecond)
					o1, _ := nodenet.NeighbourOverflows()
					pairs := map[[2]int]bool{}
					withheld := 0
					for i, r := range res {
						if nodeagent.Untrusted(r, int64(o1-o0)) {
							withheld++
						}
						for _, x := range r {
							if x.Reason != "" {
								var j int
								fmt.Sscan(x.Node, &j)
								pairs[[2]int{min(i, j), max(i, j)}] = true
							}
						}
					}
					b.ReportMetric(float64(len(pairs)), "failing-pairs")
					b.ReportMetric(float64(n*(n-1)/2), "pairs")
					b.ReportMetric(float64(failed), "failed-checks")
					b.ReportMetric(float64(o1-o0), "overflows")
					b.ReportMetric(float64(withheld), "agents-withholding")
				}
			})
		}
		for _, p := range ps {
			p.Close()
		}
		m.Close()
	}
}
