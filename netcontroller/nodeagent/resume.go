package nodeagent

import (
	"context"
	"net/netip"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Resumed is what a new agent keeps of its node's last report: when the node began being probed
// on this network from this address, and the failing peers with when each began failing.
type Resumed struct {
	Since   time.Time
	Failing map[string]v1beta1.PeerPath
	// Seen is when the report's last round started (the round that found Failing).
	Seen time.Time
}

// Resume returns what an agent starting a session on network from virt-handler pod podUID at
// addr keeps of its node's last report r at now, false when nothing: r is of another network,
// pod or address (what it says is of another interface), it reports a problem or no round since
// its since, or its last round is stale (health.SilentAfter of its interval: as old as the
// manager would no longer trust it). Kept, a restart of the agent changes no verdict: peers'
// rounds since r's since still cover the node, and a path failing before the restart keeps its
// start (PeerPath.Since), which the abort rule reads.
func Resume(r *v1beta1.PathReport, network, podUID string, addr netip.Addr, now time.Time) (Resumed, bool) {
	if r == nil || r.Network != network || podUID == "" || string(r.VirtHandlerUID) != podUID || r.Address != addr.String() ||
		r.Problem != "" || r.LastRound == nil || r.LastRound.Started.Time.Before(r.Since.Time) {
		return Resumed{}, false
	}
	interval := time.Duration(r.IntervalSeconds) * time.Second
	if interval <= 0 || !now.Before(r.LastRound.Completed.Add(health.SilentAfter(interval))) {
		return Resumed{}, false
	}
	out := Resumed{Since: r.Since.Time, Failing: map[string]v1beta1.PeerPath{}, Seen: r.LastRound.Started.Time}
	for _, p := range r.Failing {
		out.Failing[p.Node] = p
	}
	return out, true
}

// resume starts session s from the node's last report when Resume keeps it (a read that fails
// keeps nothing: the agent starts from nothing, as before).
func (a *Agent) resume(ctx context.Context, s *session) {
	ctx, cancel := context.WithTimeout(ctx, APITimeout)
	defer cancel()
	r := &v1beta1.PathReport{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, r); err != nil {
		return
	}
	if kept, ok := Resume(r, s.network, s.podUID, s.addr, time.Now()); ok {
		// The resumed round covered the live peers: those it does not list passed.
		s.since = kept.Since
		a.memory.Resume(kept)
	}
}
