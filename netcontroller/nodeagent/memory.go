package nodeagent

import (
	"net/netip"
	"time"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Memory is what an agent remembers of each peer between rounds: the start of the last round
// that judged the peer at its address, and the failing entry that round reported (none: it
// passed). A peer a round did not judge (its agent was not Ready at the round's start, or
// stopped during it: JudgedThisRound) keeps what its last check found. What a check finds is
// dated against the peer's own last check, not the round before: a peer left out for a round
// (a readiness blip, a quick restart of its agent) still had a check before a failure found on
// its return, and a failure it had then goes on with its first Since. A last check older than
// health.SilentAfter of the interval (the agent held or hung, the peer away as long) is
// forgotten: the path may have been repaired and broken again unseen.
type Memory struct {
	peers map[string]lastCheck
	// all, when set, is the start of a resumed round that judged every live peer: those its
	// report does not list passed then (their address is not known: any counts).
	all time.Time
}

// lastCheck is the last judgement of one peer.
type lastCheck struct {
	addr    netip.Addr
	started time.Time
	failing *v1beta1.PeerPath
}

// Resume starts the memory from a kept report (Resumed): its failing peers, and every other
// peer passing, in the round that started at kept.Seen.
func (m *Memory) Resume(kept Resumed) {
	m.peers, m.all = make(map[string]lastCheck, len(kept.Failing)), kept.Seen
	for node, p := range kept.Failing {
		addr, _ := netip.ParseAddr(p.Address)
		m.peers[node] = lastCheck{addr: addr, started: kept.Seen, failing: &p}
	}
}

// Before is what the memory holds for peer at addr, for a round that started at started with
// interval: the entry its last check reported failing (was: it failed then), and whether any
// check of it is remembered (checked). A check of another address (the peer's virt-handler
// moved) or older than the silence bound counts as none.
func (m *Memory) Before(peer string, addr netip.Addr, started time.Time, interval time.Duration) (prev v1beta1.PeerPath, was, checked bool) {
	if c, ok := m.peers[peer]; ok && (!c.addr.IsValid() || c.addr == addr) && Watched(c.started, started, interval) {
		if c.failing != nil {
			return *c.failing, true, true
		}
		return v1beta1.PeerPath{}, false, true
	}
	return v1beta1.PeerPath{}, false, Watched(m.all, started, interval)
}

// Failing reports whether the peer's last remembered check found it failing.
func (m *Memory) Failing(peer string) bool {
	c, ok := m.peers[peer]
	return ok && c.failing != nil
}

// Record folds a round that started at started into the memory: each result judged (failing
// entries from failing, by node; the others passed), the peers it did not judge kept, and every
// check older than the silence bound forgotten.
func (m *Memory) Record(results []Result, failing map[string]v1beta1.PeerPath, started time.Time, interval time.Duration) {
	if m.peers == nil {
		m.peers = make(map[string]lastCheck, len(results))
	}
	for node, c := range m.peers {
		if !Watched(c.started, started, interval) {
			delete(m.peers, node)
		}
	}
	for _, res := range results {
		c := lastCheck{addr: res.Addr.Addr(), started: started}
		if p, ok := failing[res.Node]; ok {
			c.failing = &p
		}
		m.peers[res.Node] = c
	}
	m.all = time.Time{}
}
