package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecommendedLimits: an agent keeping one entry per peer stays within its share
// (gc_thresh2 / NeighbourShare ≥ nodes) and the kernel's 1:4:8 ratio is kept, never below the
// defaults. Catches: a share that no longer holds the network (budget < nodes), a ratio lost.
func TestRecommendedLimits(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  NeighbourLimits
	}{
		{3, NeighbourLimits{128, 512, 1024}},
		{128, NeighbourLimits{128, 512, 1024}},
		{129, NeighbourLimits{129, 516, 1032}},
		{1000, NeighbourLimits{1000, 4000, 8000}},
		{5000, NeighbourLimits{5000, 20000, 40000}},
	} {
		got := RecommendedLimits(tc.nodes)
		if got != tc.want {
			t.Errorf("RecommendedLimits(%d) = %+v, want %+v", tc.nodes, got, tc.want)
		}
		if got.Budget() < tc.nodes-1 {
			t.Errorf("RecommendedLimits(%d): budget %d holds fewer than its %d peers", tc.nodes, got.Budget(), tc.nodes-1)
		}
	}
}

// TestNeighbourCheck is the limit check: which rounds say the node's table cannot hold the
// network's size, and what to raise. A network larger than the agent's share needs the limits
// raised whether the agent keeps its entries (one per peer) or removes those beyond its cap
// (which costs a broadcast per peer and round).
// Catches: an agent judged by its sampled entries instead of one per peer (1000 peers, 90
// entries seen, no warning), a removing agent's network not reported, a warning for a network
// within the share, an overflow not reported, a judgement without known limits.
func TestNeighbourCheck(t *testing.T) {
	def := NeighbourLimits{128, 512, 1024}
	for _, tc := range []struct {
		name string
		c    NeighbourCheck
		want []string // substrings of the message; nil: no message
	}{
		{"few peers keeping", NeighbourCheck{IPv4: true, Limits: def, Peers: 100, Entries: 100}, nil},
		{"at the budget", NeighbourCheck{IPv4: true, Limits: def, Peers: 128, Entries: 128}, nil},
		{"1000 peers keeping", NeighbourCheck{IPv4: true, Limits: def, Peers: 1000, Entries: 90},
			[]string{"probing 1000 peers needs 1000 neighbour entries", "gc_thresh2 512 / 4 = 128", "CAP_NET_ADMIN",
				"net.ipv4.neigh.default.gc_thresh1/2/3 (now 128/512/1024) to at least 1001/4004/8008 for this network's 1001 nodes"}},
		{"100 peers removing", NeighbourCheck{IPv4: true, Limits: def, Peers: 100, Entries: 100, Removing: true}, nil},
		{"1000 peers removing", NeighbourCheck{Limits: def, Peers: 1000, Entries: 110, Removing: true},
			[]string{"probing 1000 peers needs 1000 neighbour entries", "keeps 96 and removes the others", "a broadcast", "net.ipv6.neigh.default.gc_thresh1/2/3"}},
		{"held more than the share", NeighbourCheck{IPv4: true, Limits: def, Peers: 100, Entries: 200, Removing: true},
			[]string{"the agent's probes held 200 neighbour entries, more than its share"}},
		{"overflow", NeighbourCheck{IPv4: true, Limits: def, Peers: 10, Entries: 10, Overflows: 7, TableEntries: 1024},
			[]string{"overflowed 7 times during the round (1024 entries, gc_thresh3 1024)", "to at least 512/2048/4096 for the 1024 entries the table held"}},
		{"raised limits kept in the advice", NeighbourCheck{IPv4: true, Limits: NeighbourLimits{2000, 300, 9000}, Peers: 100, Entries: 100},
			[]string{"to at least 2000/512/9000"}},
		{"limits unknown", NeighbourCheck{IPv4: true, Peers: 5000, Entries: 5000, Overflows: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.c.Message()
			if tc.want == nil {
				if got != "" {
					t.Fatalf("message %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestReadNeighbourStats parses the kernel's per-CPU counters (the layout of 6.18's
// /proc/net/stat/arp_cache): entries from the first line, table_fulls and forced_gc_runs summed.
// Catches: counters read as decimal, only the first CPU's overflows counted.
func TestReadNeighbourStats(t *testing.T) {
	raw := `entries  allocs   destroys hash_grows lookups  hits     res_failed rcv_probes_mcast rcv_probes_ucast periodic_gc_runs forced_gc_runs unresolved_discards table_fulls
00000400 00000002 00000000 00000000   00000000 00000000 00000000   00000000         00000000         00000025         00000010       00000000            0000001a
00000400 00000000 00000000 00000000   0000000c 00000008 00000000   00000000         00000000         00000000         00000001       00000000            00000002
`
	p := filepath.Join(t.TempDir(), "arp_cache")
	if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNeighbourStats(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (NeighbourStats{Entries: 1024, TableFulls: 28, ForcedGCRuns: 17}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := os.WriteFile(p, []byte("entries allocs\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNeighbourStats(p); err == nil {
		t.Error("a file without table_fulls parsed")
	}
}

// TestUntrusted: a round is withheld only when the table overflowed and some peer failed.
// Catches: failures reported through an overflow, and healthy rounds withheld for one.
func TestUntrusted(t *testing.T) {
	pass, fail := Result{}, Result{Reason: "Unreachable"}
	for _, tc := range []struct {
		results   []Result
		overflows int64
		want      bool
	}{
		{[]Result{pass, fail}, 1, true},
		{[]Result{pass, pass}, 5, false},
		{[]Result{pass, fail}, 0, false},
		{nil, 3, false},
	} {
		if got := Untrusted(tc.results, tc.overflows); got != tc.want {
			t.Errorf("Untrusted(%v, %d) = %v, want %v", tc.results, tc.overflows, got, tc.want)
		}
	}
}
