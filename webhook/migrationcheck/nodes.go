package migrationcheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// newNodeSnapshot keeps an immutable snapshot of the node informer's store: pointers to the
// cached, shared objects, rebuilt on the first read after a node event and swapped atomically.
// Admission then neither copies 1,000 Nodes into a new list per request (what a cache List does,
// at ten times the cost of the rules themselves) nor walks the store's map. With pods, the index
// of each snapshot reads the nodes' usage from their cells in the pod cache.
func newNodeSnapshot(ctx context.Context, c cache.Cache, pods *PodCache) (*nodeSnapshot, error) {
	inf, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, err
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the node informer (%T) exposes no store", inf)
	}
	s := &nodeSnapshot{store: withStore.GetStore(), pods: pods}
	s.dirty.Store(true)
	mark := func(any) { s.dirty.Store(true) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: mark, DeleteFunc: mark,
		UpdateFunc: func(oldObj, newObj any) {
			if admissionChange(oldObj, newObj) {
				mark(newObj)
			}
		},
	}); err != nil {
		return nil, err
	}
	return s, nil
}

type nodeSnapshot struct {
	store toolscache.Store
	pods  *PodCache // nil: room on the nodes is not judged through the index
	dirty atomic.Bool
	mu    sync.Mutex
	state atomic.Pointer[NodeSet]
}

// load returns the current nodes and their index, rebuilding both after a node event.
func (s *nodeSnapshot) load() *NodeSet {
	if s.dirty.Load() || s.state.Load() == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.dirty.Swap(false) || s.state.Load() == nil {
			items := s.store.List()
			nodes := make([]*corev1.Node, 0, len(items))
			for _, it := range items {
				if n, ok := it.(*corev1.Node); ok {
					nodes = append(nodes, n)
				}
			}
			// Name order: admission walks the nodes in a stable order, so a message or the
			// cost of a review does not depend on the store's map order.
			slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
			ix := newNodeIndex(nodes)
			if s.pods != nil {
				ix.bindPods(s.pods)
			}
			s.state.Store(&NodeSet{Nodes: nodes, index: ix})
		}
	}
	return s.state.Load()
}

// admissionChange reports whether a node update changes what admission reads of a node: its
// labels, cordon, taints, Ready status or allocatable resources. Heartbeats (every node's status every few seconds with
// kubelet or kwok) change none of them, so they neither rebuild the snapshot and its index nor
// make admission wait for that.
func admissionChange(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*corev1.Node)
	n, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(o.Labels, n.Labels) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!slices.EqualFunc(o.Spec.Taints, n.Spec.Taints, sameTaint) || nodeReady(o) != nodeReady(n) ||
		!apiequality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
}

func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}
