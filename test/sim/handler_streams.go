package sim

import (
	"context"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stream is the migration's stream, nil when its target does not listen on a real link.
func (h *VirtHandlerStandIn) stream(uid types.UID) *Stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[uid]
}

// TargetProxy is the target node's proxy that migration uid's running stream crosses (its
// StartTargetListener's process); nil when the stream runs over plain TCP or has ended. A node
// whose virt-handler pod was recreated runs a proxy per sandbox: this is the one the stream uses.
func (h *VirtHandlerStandIn) TargetProxy(uid types.UID) *NodeProxy {
	s := h.stream(uid)
	if s == nil || s.via == nil {
		return nil
	}
	return s.via.target
}

// StreamReport is the report of migration uid's stream: the running one's, else the last one's
// as it closed (kept for the latest endedKept migrations); false when it had none.
func (h *VirtHandlerStandIn) StreamReport(uid types.UID) (StreamReport, bool) {
	h.mu.Lock()
	s := h.streams[uid]
	r, ok := h.ended.get(uid)
	h.mu.Unlock()
	if s != nil {
		return s.Report(), true
	}
	return r, ok
}

// dropStreams closes the streams of vmi's migrations other than keep's (a migration that ended
// and was cleaned up, or a VMI that went): through the proxy pair, their listeners stop on both
// nodes (StopTargetListener, StopSourceListener) and the proxies' counts are logged and kept.
func (h *VirtHandlerStandIn) dropStreams(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, keep types.UID) {
	h.mu.Lock()
	drop := map[types.UID]*Stream{}
	for uid, s := range h.streams {
		if s.vmi == vmi.UID && uid != keep {
			drop[uid] = s
			delete(h.streams, uid)
		}
	}
	h.mu.Unlock()
	for uid, s := range drop {
		s.Close()
		r := s.Report()
		if r.Via {
			ctrl.LoggerFrom(ctx).Info("stream closed", "migration", uid, "sent", r.Sent, "delivered", r.Delivered, "proxyBytes", r.ProxyBytes)
		}
		h.mu.Lock()
		h.ended.put(uid, r)
		h.mu.Unlock()
	}
}

// listenTarget opens the target's end of a migration on the node's migration0 link: through the
// node's patched proxy when Proxies is set (its listeners on migration0, forwarding to the
// stand-in's launcher sockets), else plain TCP listeners on the link's address.
func (h *VirtHandlerStandIn) listenTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, node string, link Link) (*Stream, error) {
	block := vmi.Status.MigrationMethod == kubevirtv1.BlockMigration
	proxies := h.proxies()
	if proxies == nil {
		return ListenStream(link.Sandbox, link.Addr, block)
	}
	p, err := proxies.Node(link.Sandbox, node)
	if err != nil {
		return nil, err
	}
	dir, err := proxies.SocketDir()
	if err != nil {
		return nil, err
	}
	return ListenStreamVia(p, string(vmi.UID), dir, block, h.disableTLS(ctx))
}

// startStream starts the source's end: through the source node's proxy when the target listens
// through one, else plain TCP from the source's migration0.
func (h *VirtHandlerStandIn) startStream(s *Stream, src Side, target netip.Addr, plan StreamPlan, opts MigrationOptions, dataGB int64) {
	if s.Path() == PathPlain {
		s.Start(src.Migration0.Sandbox, src.Migration0.Addr, target, plan, opts, dataGB)
		return
	}
	proxies := h.proxies()
	if proxies == nil {
		s.failStart(failedPrefix + "the stand-in stopped using the migration proxies while the target listened through one")
		return
	}
	p, err := proxies.Node(src.Migration0.Sandbox, src.Node)
	if err != nil {
		s.failStart(failedPrefix + err.Error())
		return
	}
	s.StartVia(p, target, plan, opts, dataGB)
}

// SetProxies switches the streams that start from now on: through p, or over plain TCP (nil).
// For a spec whose subject is plain TCP over a broken path (a stall that KubeVirt's progress
// timeout ends): the pair's TLS handshake does not cross a path narrowed below the MTU, so
// through it such a migration fails at its start instead.
func (h *VirtHandlerStandIn) SetProxies(p *MigrationProxies) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Proxies = p
}

func (h *VirtHandlerStandIn) proxies() *MigrationProxies {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Proxies
}

// disableTLS is the KubeVirt CR's spec.configuration.migrations.disableTLS, which virt-handler's
// proxy reads when it starts a listener (false when unset or unreadable, KubeVirt's default).
func (h *VirtHandlerStandIn) disableTLS(ctx context.Context) bool {
	list := &kubevirtv1.KubeVirtList{}
	if err := h.Client.List(ctx, list, client.InNamespace(h.Namespace)); err != nil || len(list.Items) == 0 {
		return false
	}
	m := list.Items[0].Spec.Configuration.MigrationConfiguration
	return m != nil && m.DisableTLS != nil && *m.DisableTLS
}

// endedKept is how many ended migrations' stream reports the stand-in keeps.
const endedKept = 256

// endedStreams keeps the latest endedKept reports, oldest dropped first.
type endedStreams struct {
	order   []types.UID
	reports map[types.UID]StreamReport
}

func (e *endedStreams) put(uid types.UID, r StreamReport) {
	if e.reports == nil {
		e.reports = map[types.UID]StreamReport{}
	}
	if _, ok := e.reports[uid]; !ok {
		e.order = append(e.order, uid)
	}
	e.reports[uid] = r
	if len(e.order) > endedKept {
		delete(e.reports, e.order[0])
		e.order = e.order[1:]
	}
}

func (e *endedStreams) get(uid types.UID) (StreamReport, bool) {
	r, ok := e.reports[uid]
	return r, ok
}
