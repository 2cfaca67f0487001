package health

import "sync/atomic"

// Snapshot is the migration network's readiness as the network controller last observed it. It
// is immutable once published; readers get a consistent view without locks.
type Snapshot struct {
	// Configured is true when the setting asks for a migration network.
	Configured bool
	// Hash of the setting's effective value, and the hash the settings controller applied.
	Hash, AppliedHash string
	// Network is the NAD the setting renders to; ClusterNetwork the value's cluster network.
	Network, ClusterNetwork string
	// Eligible nodes and how many of them are attached with an in-range address.
	Eligible, Attached int
	// NotAttached names the eligible nodes that are not attached to the current network, with the
	// reason (the network controller's node reasons: NoPod, NotRolled, NoIP, ...); nil when every
	// one is. Admission drops them from a migration's targets and refuses them as its source,
	// while migrations between attached nodes go on.
	NotAttached map[string]string
	// Ready is the Ready condition: configured and applied, every eligible node attached and
	// KubeVirt available; or not configured and KubeVirt available.
	Ready bool
	// Reason and Message explain Ready.
	Reason, Message string
}

// Store holds the latest Snapshot; the zero Store holds none.
type Store struct{ p atomic.Pointer[Snapshot] }

// Load returns the latest snapshot, or nil before the first observation.
func (s *Store) Load() *Snapshot { return s.p.Load() }

// Publish swaps in a new snapshot.
func (s *Store) Publish(snap *Snapshot) { s.p.Store(snap) }

// NewStore returns a store already holding snap, for callers that judge admission without running
// the network controller (benchmarks, tests).
func NewStore(snap *Snapshot) *Store {
	s := &Store{}
	s.Publish(snap)
	return s
}

// ReasonNodesNotAttached is the Ready condition's reason (and a Snapshot's) when some eligible
// nodes are not attached: admission then judges each migration's own nodes (NotAttached).
const ReasonNodesNotAttached = "NodesNotAttached"

// ReasonNetworkNotJudged is the reason of Ready and Healthy (and a Snapshot's) while the network
// in force is a NAD migranet does not judge (Effective.NotJudged): the conditions are Unknown, the
// snapshot counts as ready (nothing of migranet's holds a migration up), and no rule refuses on
// that network's account.
const ReasonNetworkNotJudged = "NetworkNotJudged"

// ReasonKubeVirtNotReady is the Ready condition's reason (and a Snapshot's) when the network is in
// place and only KubeVirt is not Available: rule kubevirtReady speaks then, not networkReady.
const ReasonKubeVirtNotReady = "KubeVirtNotReady"
