package netcontroller

import (
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings"
)

// PodAddrs remembers each virt-handler pod's migration0 address (settings.PodMigrationAddr, a JSON
// decode of its network-status) by the pod's UID and resourceVersion, from one observation to the
// next: an observation looks at every virt-handler pod, and any one pod's change starts one, so
// without it a rollout over n nodes decoded n² annotations (1,000 nodes: two thirds of the
// manager's CPU, make scale). A pod unseen for one observation is forgotten. The zero value is
// ready; a nil *PodAddrs remembers nothing.
type PodAddrs struct {
	mu   sync.Mutex
	seen map[types.UID]podAddr
}

type podAddr struct {
	resourceVersion string
	addr            netip.Addr
	ok              bool
}

// Round starts an observation and returns its lookup: what a pod of the same UID and
// resourceVersion had, else decoded anew. A pod without a UID or resourceVersion (not read from
// the API) is always decoded.
func (m *PodAddrs) Round() func(*corev1.Pod) (netip.Addr, bool) {
	if m == nil {
		return settings.PodMigrationAddr
	}
	m.mu.Lock()
	prev := m.seen
	cur := make(map[types.UID]podAddr, len(prev))
	m.seen = cur
	m.mu.Unlock()
	return func(p *corev1.Pod) (netip.Addr, bool) {
		if p.UID == "" || p.ResourceVersion == "" {
			return settings.PodMigrationAddr(p)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		e, ok := cur[p.UID]
		if !ok {
			e, ok = prev[p.UID]
		}
		if !ok || e.resourceVersion != p.ResourceVersion {
			e = podAddr{resourceVersion: p.ResourceVersion}
			e.addr, e.ok = settings.PodMigrationAddr(p)
		}
		cur[p.UID] = e
		return e.addr, e.ok
	}
}
