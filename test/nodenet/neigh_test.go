package nodenet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/test/nodenet"
)

const meshNetwork = "kubevirt/vm-migration-network-mesh"

func lim(t1, t2, t3 int) nodeagent.NeighbourLimits {
	return nodeagent.NeighbourLimits{GCThresh1: t1, GCThresh2: t2, GCThresh3: t3}
}

// TestSizeNeighbourTables is the lab's sizing, on a copy of the sysctls: the formula
// (nodes × (nodes − 1) + 16 × nodes + entries already held, × 1/2/4), each threshold raised only
// where it is lower, both families, and the one log line.
// Catches: a sizing that lowers a threshold someone raised (the "higher" cases), a mesh term
// that is not quadratic or forgets the entries already held (the 40- and 100-node cases), one
// family left at the defaults.
func TestSizeNeighbourTables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   int
		held    uint64
		have    nodeagent.NeighbourLimits
		want    nodeagent.NeighbourLimits
		logWant string
	}{
		{"40 nodes on the defaults", 40, 0, lim(128, 512, 1024), lim(2200, 4400, 8800), "raised to 2200/4400/8800"},
		{"100 nodes, 300 entries held", 100, 300, lim(128, 512, 1024), lim(11800, 23600, 47200), "raised to 11800/23600/47200"},
		{"higher already", 40, 0, lim(80000, 90000, 100000), lim(80000, 90000, 100000), "80000/90000/100000 kept"},
		{"thresh3 higher, the others not", 40, 0, lim(128, 512, 50000), lim(2200, 4400, 50000), "raised to 2200/4400/50000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, stat := t.TempDir(), t.TempDir()
			defer func(r, s string) { nodenet.SysctlRoot, nodenet.StatRoot = r, s }(nodenet.SysctlRoot, nodenet.StatRoot)
			nodenet.SysctlRoot, nodenet.StatRoot = root, stat
			for _, is4 := range []bool{true, false} {
				dir := filepath.Join(root, nodeagent.SysctlDir(is4))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for i, v := range []int{tc.have.GCThresh1, tc.have.GCThresh2, tc.have.GCThresh3} {
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("gc_thresh%d", i+1)), []byte(fmt.Sprintf("%d\n", v)), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				statFile := filepath.Join(stat, nodeagent.StatFile(is4))
				if err := os.MkdirAll(filepath.Dir(statFile), 0o755); err != nil {
					t.Fatal(err)
				}
				line := fmt.Sprintf("entries table_fulls forced_gc_runs\n%08x 00000000 00000000\n", tc.held)
				if err := os.WriteFile(statFile, []byte(line), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			if err := nodenet.SizeNeighbourTables(tc.nodes, &log); err != nil {
				t.Fatal(err)
			}
			for _, is4 := range []bool{true, false} {
				got, err := nodeagent.ReadNeighbourLimits(filepath.Join(root, nodeagent.SysctlDir(is4)))
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("IPv4 %v: %+v, want %+v", is4, got, tc.want)
				}
			}
			if l := log.String(); strings.Count(l, "\n") != 1 || strings.Count(l, tc.logWant) != 2 {
				t.Errorf("log %q: want one line saying %q for both families", l, tc.logWant)
			}
		})
	}
}

// TestHostLimitsFromPodNamespace: in a pod's network namespace the neighbour sysctls do not
// exist (net/ipv4/neigh has the pod's interfaces only, no default), and
// nodeagent.HostNeighbourLimits, called from a thread in such a namespace, reads the initial
// namespace's through a host process (PID 1, or kthreadd where PID 1's link is closed, as on
// this machine), as the agent does from its pod.
// Catches: an agent that reads /proc/sys in its own namespace (no limits in any pod).
func TestHostLimitsFromPodNamespace(t *testing.T) {
	ctx := context.Background()
	sb := nodenet.NS(fmt.Sprintf("mnl%d", os.Getpid()))
	if err := nodenet.AddNS(ctx, sb); err != nil {
		t.Fatal(err)
	}
	defer nodenet.DelNS(ctx, sb)
	want, err := nodeagent.ReadNeighbourLimits("/proc/sys/" + nodeagent.SysctlDir(true))
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		l              nodeagent.NeighbourLimits
		err, localRead error
	}
	ch := make(chan out, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open(sb.Path())
		if err != nil {
			ch <- out{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- out{err: err}
			return
		}
		_, local := nodeagent.ReadNeighbourLimits("/proc/sys/" + nodeagent.SysctlDir(true))
		l, err := nodeagent.HostNeighbourLimits("/proc", true)
		ch <- out{l, err, local}
	}()
	o := <-ch
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !errors.Is(o.localRead, os.ErrNotExist) {
		t.Errorf("reading the sysctls inside the pod's namespace: %v, want not found", o.localRead)
	}
	if o.l != want {
		t.Errorf("HostNeighbourLimits from the pod's namespace: %+v, want the initial namespace's %+v", o.l, want)
	}
}

// meshProbers opens a Prober in every sandbox of the mesh (serving), closed at cleanup.
func meshProbers(t testing.TB, m *nodenet.Mesh, timeout time.Duration) []*nodeagent.Prober {
	t.Helper()
	var ps []*nodeagent.Prober
	for i := range m.N {
		opened, err := nodeagent.OpenInWithNeighbours(m.NS(i).Path(), "migration0", m.Addr(i), 4797)
		if err != nil {
			t.Fatal(err)
		}
		p := nodeagent.NewProber(opened.Conn, meshNetwork, 1500, timeout, 2)
		p.UseNeighbours(opened.Neighbours)
		go p.Serve()
		t.Cleanup(func() { p.Close() })
		ps = append(ps, p)
	}
	return ps
}

// allPairs runs one round of every sandbox's prober over every other sandbox at once, and
// returns each prober's results and the failures in all.
func allPairs(ctx context.Context, m *nodenet.Mesh, ps []*nodeagent.Prober, spread time.Duration) ([][]nodeagent.Result, int) {
	res := make([][]nodeagent.Result, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		var peers []nodeagent.Peer
		for j := range m.N {
			if j != i {
				peers = append(peers, nodeagent.Peer{Node: fmt.Sprint(j), Addr: netip.AddrPortFrom(m.Addr(j), 4797)})
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = p.Round(ctx, peers, spread) }()
	}
	wg.Wait()
	failed := 0
	for _, r := range res {
		for _, x := range r {
			if x.Reason != "" {
				failed++
			}
		}
	}
	return res, failed
}

// TestNeighbourOverflowIsNoVerdict overflows the kernel's IPv4 neighbour table on purpose: 12
// sandboxes probing each other (132 entries) with gc_thresh3 lowered to 40 above what the table
// holds. Some pairs then read Unreachable although every link is up, the kernel counts the
// overflows (table_fulls), and the agent's rule withholds the round (nodeagent.Untrusted: it reports
// NeighbourTableFull, not the failures). Then nodenet.SizeNeighbourTables raises the thresholds
// for the 12 nodes, and the next round passes every pair with no overflow.
//
// The table is the whole machine's: the lowered gc_thresh3 leaves 40 new entries to everyone for
// the few seconds of the first round; every threshold found lower than before is set back after
// (raised, never lowered), also when the test fails.
// Catches: an overflow the counters do not show (the first round's overflows), a rule that
// reports the overflowed round's failures, a sizing that does not make room for the mesh (the
// second round fails).
func TestNeighbourOverflowIsNoVerdict(t *testing.T) {
	ctx := context.Background()
	m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mno%d", os.Getpid()), 12, 1500, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ps := meshProbers(t, m, 200*time.Millisecond)

	dir := filepath.Join(nodenet.SysctlRoot, nodeagent.SysctlDir(true))
	orig, err := nodeagent.ReadNeighbourLimits(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := nodeagent.ReadNeighbourLimits(dir)
		if err != nil {
			t.Error(err)
			return
		}
		back := nodeagent.NeighbourLimits{GCThresh1: max(cur.GCThresh1, orig.GCThresh1), GCThresh2: max(cur.GCThresh2, orig.GCThresh2), GCThresh3: max(cur.GCThresh3, orig.GCThresh3)}
		if err := nodenet.WriteNeighbourLimits(true, cur, back); err != nil {
			t.Errorf("restoring the neighbour thresholds %+v: %v", orig, err)
		}
	})
	stats, err := nodeagent.ReadNeighbourStats(filepath.Join(nodenet.StatRoot, nodeagent.StatFile(true)))
	if err != nil {
		t.Fatal(err)
	}
	low := int(stats.Entries) + 40
	lowered := nodeagent.NeighbourLimits{GCThresh1: min(orig.GCThresh1, low), GCThresh2: min(orig.GCThresh2, low), GCThresh3: min(orig.GCThresh3, low)}
	if err := nodenet.WriteNeighbourLimits(true, orig, lowered); err != nil {
		t.Fatal(err)
	}
	before, err := nodenet.NeighbourOverflows()
	if err != nil {
		t.Fatal(err)
	}
	res, failed := allPairs(ctx, m, ps, 200*time.Millisecond)
	after, err := nodenet.NeighbourOverflows()
	if err != nil {
		t.Fatal(err)
	}
	overflows := int64(after - before)
	t.Logf("gc_thresh3 %d (%d entries held before): %d of %d checks failed, %d overflows", lowered.GCThresh3, stats.Entries, failed, m.N*(m.N-1), overflows)
	if overflows == 0 || failed == 0 {
		t.Fatalf("with gc_thresh3 at %d: %d overflows, %d failed checks; want both", lowered.GCThresh3, overflows, failed)
	}
	withheld := 0
	for _, r := range res {
		if nodeagent.Untrusted(r, overflows) {
			withheld++
		}
	}
	for _, r := range res {
		for _, x := range r {
			if x.Reason != "" && !nodeagent.Untrusted(r, overflows) {
				t.Errorf("a round with a failure (%s) during an overflow would be reported", x.Reason)
			}
		}
	}
	t.Logf("%d of %d agents withhold their round", withheld, m.N)

	if err := nodenet.WriteNeighbourLimits(true, lowered, orig); err != nil {
		t.Fatal(err)
	}
	// The lab's own sizing, from the lowered thresholds (never lowering) and an empty mesh: the
	// room must come from the node count, not from the entries the first round left.
	for i := range m.N {
		if _, err := nodenet.Exec(ctx, m.NS(i), "ip", "neigh", "flush", "dev", "migration0"); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodenet.WriteNeighbourLimits(true, orig, lowered); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := nodenet.SizeNeighbourTables(m.N, &log); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(log.String()))
	before, _ = nodenet.NeighbourOverflows()
	_, failed = allPairs(ctx, m, ps, 200*time.Millisecond)
	after, _ = nodenet.NeighbourOverflows()
	if failed != 0 || after != before {
		t.Errorf("after sizing: %d failed checks, %d overflows; want none", failed, after-before)
	}
}

// TestAgentNeighbourEntries measures the neighbour entries an agent's probing holds in its
// namespace with 100 peers, each of which also checks the agent once during the round (as every
// node probes every other), and the address resolutions (ARP requests, broadcast: a bystander
// on the bridge counts them) that removing entries costs:
//   - kept: one entry per peer (100) for good, and no broadcast once resolved;
//   - removed beyond a cap of 40 (as the agent does beyond three quarters of its share): at most
//     the cap plus the entries in their grace at any moment (sampled every 10 ms), the cap after
//     the round, a broadcast per removed peer;
//   - removed beyond a cap of 200, above the peers: nothing removed, no broadcast;
//   - removed without a cap (every idle entry, after the 200 ms grace): at most half the peers
//     at once (about a third seen), none after the round.
//
// The numbers are logged.
// Catches: an agent that does not remove its entries (the peak stays at 100), one that removes
// only the entries of its own checks (the peers' probes leave theirs: the end count), one that
// removes within its cap (broadcasts with cap 200), one whose removal breaks probing (failures).
func TestAgentNeighbourEntries(t *testing.T) {
	const peers = 100
	ctx := context.Background()
	m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mne%d", os.Getpid()), peers+2, 1500, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	// Room for the agent's and the peers' entries whatever the machine's thresholds.
	if _, _, err := nodenet.RaiseNeighbourLimits(true, nodeagent.NeighbourLimits{GCThresh1: 512, GCThresh2: 2048, GCThresh3: 4096}); err != nil {
		t.Fatal(err)
	}
	ps := meshProbers(t, m, 300*time.Millisecond)
	arp, err := arpRequests(ctx, m.NS(peers+1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		remove            bool
		cap               int
		maxPeak, maxEnd   int
		minEnd            int
		broadcastsAtLeast int
		broadcastsAtMost  int
	}{
		{"kept", false, 0, peers, peers, peers, 0, 0},
		{"removed beyond 40", true, 40, 40 + peers/3, 40, 30, peers / 2, 2 * peers},
		{"removed beyond 200", true, 200, peers, peers, peers, 0, 0},
		{"removed, no cap", true, 0, peers / 2, 2, 0, peers, 2 * peers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps[0].SetNeighbourCap(tc.cap)
			if tc.remove {
				ps[0].RemoveNeighbours(nodeagent.DefaultNeighbourGrace)
			}
			// A first round resolves every peer; the second is the steady state measured.
			if _, _, failed, _ := agentRound(t, m, ps, peers, 2*time.Second); failed != 0 {
				t.Errorf("first round: %d checks failed", failed)
			}
			b0 := arp()
			peak, end, failed, removed := agentRound(t, m, ps, peers, 2*time.Second)
			broadcasts := arp() - b0
			t.Logf("%d peers, entries %s: peak %d, %d after the round, %d removals, %d ARP broadcasts, %d failed checks", peers, tc.name, peak, end, removed, broadcasts, failed)
			if failed != 0 {
				t.Errorf("%d checks failed", failed)
			}
			if peak > tc.maxPeak || end > tc.maxEnd || end < tc.minEnd {
				t.Errorf("peak %d, %d after the round; want a peak of at most %d and %d-%d after", peak, end, tc.maxPeak, tc.minEnd, tc.maxEnd)
			}
			if broadcasts < tc.broadcastsAtLeast || broadcasts > tc.broadcastsAtMost {
				t.Errorf("%d ARP broadcasts in the round; want %d-%d", broadcasts, tc.broadcastsAtLeast, tc.broadcastsAtMost)
			}
		})
	}
}

// arpRequests counts the ARP requests arriving in namespace n (nftables, table arp
// migranet_arp): the broadcasts every node on the segment receives. It returns the reader.
func arpRequests(ctx context.Context, n nodenet.NS) (func() int, error) {
	for _, cmd := range [][]string{
		{"add", "table", "arp", "migranet_arp"},
		{"add", "counter", "arp", "migranet_arp", "req"},
		{"add", "chain", "arp", "migranet_arp", "in", "{ type filter hook input priority 0; }"},
		{"add", "rule", "arp", "migranet_arp", "in", "arp", "operation", "request", "counter", "name", "req"},
	} {
		if _, err := nodenet.Exec(ctx, n, "nft", cmd...); err != nil {
			return nil, err
		}
	}
	return func() int {
		out, err := nodenet.Exec(ctx, n, "nft", "list", "counter", "arp", "migranet_arp", "req")
		if err != nil {
			return -1
		}
		f := strings.Fields(string(out))
		for i := range f[:len(f)-1] {
			if f[i] == "packets" {
				var v int
				fmt.Sscan(f[i+1], &v)
				return v
			}
		}
		return -1
	}, nil
}

// settled waits, when p removes its neighbour entries, until a sweep has ended a grace (twice
// DefaultNeighbourGrace) after since: the entries idle since then have had their chance to go.
// Without removal nothing changes after a round, and it returns at once.
func settled(t testing.TB, p *nodeagent.Prober, since time.Time) {
	t.Helper()
	if p.Swept.Load() == 0 {
		return
	}
	want := since.Add(2 * nodeagent.DefaultNeighbourGrace).UnixNano()
	for deadline := time.Now().Add(10 * time.Second); p.Swept.Load() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("no sweep of the neighbour entries ended within 10 s")
		}
		<-time.After(10 * time.Millisecond)
	}
}

// agentRound runs sandbox 0's round over sandboxes 1…peers, spread over spread, while each of
// them checks sandbox 0 once at a random moment of it; it samples sandbox 0's entries every
// 10 ms and returns the most seen, the count a grace after the round, the failed checks and the
// removals.
func agentRound(t testing.TB, m *nodenet.Mesh, ps []*nodeagent.Prober, peers int, spread time.Duration) (peak, end, failed int, removed uint64) {
	ctx := context.Background()
	agent := nodeagent.Peer{Node: "agent", Addr: netip.AddrPortFrom(m.Addr(0), 4797)}
	var list []nodeagent.Peer
	for j := 1; j <= peers; j++ {
		list = append(list, nodeagent.Peer{Node: fmt.Sprint(j), Addr: netip.AddrPortFrom(m.Addr(j), 4797)})
	}
	removed0 := ps[0].Removed.Load()
	done := make(chan struct{})
	var samples sync.WaitGroup
	samples.Add(1)
	go func() {
		defer samples.Done()
		for {
			if held, err := ps[0].Neighbours(); err == nil {
				peak = max(peak, len(held))
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for j := 1; j <= peers; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each peer checks the agent once, at its own moment of the round (evenly spread, as
			// the peers' own rounds would be): a schedule, not a wait.
			<-time.After(time.Duration(j-1) * spread / time.Duration(peers))
			if r := ps[j].Check(ctx, agent); r.Reason != "" {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	for _, r := range ps[0].Round(ctx, list, spread) {
		if r.Reason != "" {
			failed++
		}
	}
	wg.Wait()
	close(done)
	samples.Wait()
	settled(t, ps[0], time.Now())
	held, err := ps[0].Neighbours()
	if err != nil {
		t.Fatal(err)
	}
	return peak, len(held), failed, ps[0].Removed.Load() - removed0
}

// TestAgentNeighbourEntriesIPv6 is the same on an IPv6 network (NDP, the ndisc table), small: 8
// peers, kept (8 entries listed) then removed without a cap (none after the round); the
// kernel's table statistics and limits of IPv6 are read as the agent reads them.
// Catches: an entry list or removal that only knows IPv4 (family or 4-byte addresses: nothing
// listed, or nothing removed).
func TestAgentNeighbourEntriesIPv6(t *testing.T) {
	const peers = 8
	ctx := context.Background()
	m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mn6%d", os.Getpid()), peers+1, 1500, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if _, err := nodeagent.ReadHostNeighbourStats("/proc", false); err != nil {
		t.Errorf("IPv6 table statistics: %v", err)
	}
	if l, err := nodeagent.HostNeighbourLimits("/proc", false); err != nil || l.GCThresh3 == 0 {
		t.Errorf("IPv6 limits: %+v %v", l, err)
	}
	ps := meshProbers(t, m, 300*time.Millisecond)
	_, end, failed, _ := agentRound(t, m, ps, peers, 500*time.Millisecond)
	if failed != 0 || end != peers {
		t.Errorf("kept: %d entries listed after the round, %d failed checks; want %d and 0", end, failed, peers)
	}
	ps[0].RemoveNeighbours(nodeagent.DefaultNeighbourGrace)
	_, end, failed, removed := agentRound(t, m, ps, peers, 500*time.Millisecond)
	var held []netip.Addr
	for deadline := time.Now().Add(5 * time.Second); ; { // until the sweeps removed every entry
		if held, err = ps[0].Neighbours(); err != nil {
			t.Fatal(err)
		}
		if len(held) == 0 || time.Now().After(deadline) {
			break
		}
		settled(t, ps[0], time.Now())
	}
	t.Logf("IPv6, %d peers, removed: %d after the round, then %d; %d removals", peers, end, len(held), removed)
	if failed != 0 || len(held) != 0 || removed < peers {
		t.Errorf("removed: %d entries left, %d removals, %d failed checks; want 0, at least %d, 0", len(held), removed, failed, peers)
	}
}
