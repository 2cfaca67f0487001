package migrationcheck

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// PodView answers what the feasibleTarget rule needs of the cluster's pods.
type PodView interface {
	// OfVMI returns the non-terminal pods bound to a node and labelled kubevirt.io/created-by=uid
	// (the VMI's virt-launcher pods).
	OfVMI(uid types.UID) []*corev1.Pod
	// Usage returns what the non-terminal pods bound to node request, and how many there are.
	Usage(node string) NodeUsage
	// MigrationTargets returns the non-terminal pods labelled kubevirt.io/migrationJobUID=uid,
	// bound or not: the migration's target pod (and its hotplug attachment pods).
	MigrationTargets(uid types.UID) []*corev1.Pod
}

// NodeUsage is what a node's pods request, and how many there are.
type NodeUsage struct {
	Requests amounts
	Pods     int
}

// amounts holds resource amounts (see amount): cpu, memory and ephemeral storage in fixed slots,
// which the fit of every node reads without a map lookup, the others in a map.
type amounts struct {
	fixed [3]int64
	other map[corev1.ResourceName]int64
}

// slot is name's fixed slot, or -1.
func slot(name corev1.ResourceName) int {
	switch name {
	case corev1.ResourceCPU:
		return 0
	case corev1.ResourceMemory:
		return 1
	case corev1.ResourceEphemeralStorage:
		return 2
	}
	return -1
}

func (a *amounts) get(name corev1.ResourceName, slot int) int64 {
	if slot >= 0 {
		return a.fixed[slot]
	}
	return a.other[name]
}

func (a *amounts) add(name corev1.ResourceName, v int64) {
	if s := slot(name); s >= 0 {
		a.fixed[s] += v
		return
	}
	if a.other == nil {
		a.other = map[corev1.ResourceName]int64{}
	}
	a.other[name] += v
}

// amountsOf converts a resource list.
func amountsOf(l corev1.ResourceList) amounts {
	var a amounts
	for name, q := range l {
		a.add(name, amount(name, q))
	}
	return a
}

// amount is q in the unit the scheduler compares name in: millicores for cpu, else the value.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// quantity turns an amount of name back into a quantity for a message.
func quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch name {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

// Pod cache indexes.
const (
	podNodeIndex      = "spec.nodeName"
	podCreatedByIndex = "createdBy"
	podMigrationIndex = "migrationJobUID"
)

// activePods is the field selector kube-scheduler's own pod informer uses: pods that still hold
// their node's resources.
var activePods = fields.ParseSelectorOrDie("status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed))

// PodCache is a cache of every active pod in the cluster, each trimmed to what scheduling reads
// (its node, its total requests, and a virt-launcher's node selector), with per-node usage
// computed on the first read after a pod event on that node. It is separate from the manager's
// cache, which holds full virt-handler pods of the KubeVirt namespace only.
type PodCache struct {
	cache.Cache
	// cells maps a node's name to its *usageCell. The node index resolves its nodes' cells once
	// per node snapshot, so a review reads a node's usage without a map lookup.
	cells sync.Map
	// indexer is the pod informer's, set by Start before the cache starts.
	indexer atomic.Pointer[toolscache.Indexer]
}

// usageCell holds one node's usage: nil until computed, and again after any event on its pods.
type usageCell struct {
	node string
	// gen counts events on the node's pods: a sum computed while one arrived is not kept, as it
	// may predate it.
	gen atomic.Uint64
	v   atomic.Pointer[summed]
	// room, for a cell of a node snapshot, is the node's roomClass in its index, cleared with v.
	room *atomic.Uint32
}

// summed is a node's usage and the cell's gen it was summed at.
type summed struct {
	NodeUsage
	gen uint64
}

// NewPodCache builds the pod cache with mgr's configuration and registers it with mgr, so it
// starts (on every replica) and stops with it.
func NewPodCache(mgr ctrl.Manager) (*PodCache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Field: activePods, Transform: TrimPod}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the pod cache: %w", err)
	}
	p := &PodCache{Cache: c}
	if err := mgr.Add(p); err != nil {
		return nil, err
	}
	return p, nil
}

// Start indexes the pods and starts the cache. The informer is created here, before the cache
// starts, so it starts with it; admission reads nothing from it before (p.indexer unset).
func (p *PodCache) Start(ctx context.Context) error {
	if err := p.index(ctx); err != nil {
		return err
	}
	return p.Cache.Start(ctx)
}

// NeedLeaderElection is false: every replica serves admission.
func (p *PodCache) NeedLeaderElection() bool { return false }

func (p *PodCache) index(ctx context.Context) error {
	inf, err := p.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("the pod informer (%T) has no indexer", inf)
	}
	// The informer's own indexers: a lookup is a map read, without the field selector, list
	// copy and reflection a cache List costs per review.
	if err := sii.AddIndexers(toolscache.Indexers{podNodeIndex: byNode, podCreatedByIndex: byCreator, podMigrationIndex: byMigration}); err != nil {
		return err
	}
	indexer := sii.GetIndexer()
	p.indexer.Store(&indexer)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: p.forget, DeleteFunc: p.forget,
		UpdateFunc: func(oldObj, newObj any) { p.forget(oldObj); p.forget(newObj) },
	})
	return err
}

// forget drops the usage of the node of a pod an event is about (the informer's store already
// holds the change).
func (p *PodCache) forget(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		c := p.cell(pod.Spec.NodeName)
		c.gen.Add(1)
		c.v.Store(nil)
		if c.room != nil {
			c.room.Store(0)
		}
	}
}

func byNode(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

func byCreator(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		if uid := pod.Labels[kubevirtv1.CreatedByLabel]; uid != "" {
			return []string{uid}, nil
		}
	}
	return nil, nil
}

func byMigration(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		if uid := pod.Labels[kubevirtv1.MigrationJobLabel]; uid != "" {
			return []string{uid}, nil
		}
	}
	return nil, nil
}

// OfVMI implements PodView.
func (p *PodCache) OfVMI(uid types.UID) []*corev1.Pod {
	return p.byIndex(podCreatedByIndex, string(uid))
}

// MigrationTargets implements PodView.
func (p *PodCache) MigrationTargets(uid types.UID) []*corev1.Pod {
	return p.byIndex(podMigrationIndex, string(uid))
}

// OnTargetPodEvent calls fn on every event of a migration target pod (the traffic counts them).
func (p *PodCache) OnTargetPodEvent(ctx context.Context, fn func()) error {
	inf, err := p.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if isTargetPodEvent(o) {
				fn()
			}
		},
		DeleteFunc: func(o any) {
			if isTargetPodEvent(deletedObj(o)) {
				fn()
			}
		},
		UpdateFunc: func(o, n any) {
			if isTargetPodEvent(o, n) {
				fn()
			}
		},
	})
	return err
}

func deletedObj(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// Usage implements PodView, summing the node's pods once per change of them.
func (p *PodCache) Usage(node string) NodeUsage {
	return p.usageOf(p.cell(node)).NodeUsage
}

// cell returns node's usage cell, made on first use.
func (p *PodCache) cell(node string) *usageCell {
	if c, ok := p.cells.Load(node); ok {
		return c.(*usageCell)
	}
	c, _ := p.cells.LoadOrStore(node, &usageCell{node: node})
	return c.(*usageCell)
}

// usageOf returns c's usage (shared: not to be modified) and the gen it was summed at, summing the
// node's pods when an event on them dropped the last sum.
func (p *PodCache) usageOf(c *usageCell) *summed {
	if u := c.v.Load(); u != nil {
		return u
	}
	gen := c.gen.Load()
	u := &summed{NodeUsage: sumUsage(p.byIndex(podNodeIndex, c.node)), gen: gen}
	if c.gen.Load() == gen && c.v.CompareAndSwap(nil, u) && c.gen.Load() != gen {
		c.v.CompareAndSwap(u, nil) // an event came between the check and the store
	}
	return u
}

// learn keeps class, derived from u, as c's room class, unless an event on the node's pods came
// since u was summed. The event clears the class after raising gen: either it comes after the store
// below, or the check after the store sees its gen and takes the class back.
func (c *usageCell) learn(u *summed, class roomClass) {
	if c.room == nil || c.gen.Load() != u.gen || c.room.Load() == uint32(class) {
		return
	}
	c.room.Store(uint32(class))
	if c.gen.Load() != u.gen {
		c.room.CompareAndSwap(uint32(class), 0)
	}
}

// cellsOf gives nodes new usage cells, side by side in memory (a review that checks room on
// hundreds of nodes then reads them in order, not scattered over the heap), with cell i's room
// class in rooms[i], and forgets the cells of every other node, so deleted nodes leave none behind.
// A new cell starts empty: its first read sums the node's pods. An event that loaded the old cell
// before the swap came after the store change, so that sum sees the change; one after the swap
// drops the new cell.
func (p *PodCache) cellsOf(nodes []*corev1.Node, rooms []atomic.Uint32) []*usageCell {
	block := make([]usageCell, len(nodes))
	cells := make([]*usageCell, len(nodes))
	keep := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		if n != nil {
			block[i].node, block[i].room = n.Name, &rooms[i]
			cells[i], keep[n.Name] = &block[i], true
			p.cells.Store(n.Name, cells[i])
		}
	}
	p.cells.Range(func(k, _ any) bool {
		if !keep[k.(string)] {
			p.cells.Delete(k)
		}
		return true
	})
	return cells
}

// byIndex returns the cached pods under value of index; none before the cache started.
func (p *PodCache) byIndex(index, value string) []*corev1.Pod {
	indexer := p.indexer.Load()
	if indexer == nil {
		return nil
	}
	items, err := (*indexer).ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(items))
	for _, it := range items {
		if pod, ok := it.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out
}

func sumUsage(pods []*corev1.Pod) NodeUsage {
	var u NodeUsage
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		u.Pods++
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			u.Requests.add(name, amount(name, q))
		}
	}
	return u
}

// PodList is a PodView over a list of pods read once (migranet preflight reads them from the API).
type PodList []*corev1.Pod

// OfVMI implements PodView.
func (l PodList) OfVMI(uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range l {
		if p.Spec.NodeName != "" && p.Labels[kubevirtv1.CreatedByLabel] == string(uid) {
			out = append(out, p)
		}
	}
	return out
}

// MigrationTargets implements PodView.
func (l PodList) MigrationTargets(uid types.UID) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range l {
		if p.Labels[kubevirtv1.MigrationJobLabel] == string(uid) {
			out = append(out, p)
		}
	}
	return out
}

// Usage implements PodView.
func (l PodList) Usage(node string) NodeUsage {
	var on []*corev1.Pod
	for _, p := range l {
		if p.Spec.NodeName == node {
			on = append(on, p)
		}
	}
	return sumUsage(on)
}

// TrimPod is the pod cache's transform: it keeps a pod's identity, labels, node, phase and, for a
// virt-launcher pod, its node selector, and replaces its containers by one that requests what the
// whole pod does (resourcehelper.PodRequests: containers, init containers, sidecars, overhead), so a
// cached pod costs a few hundred bytes and its requests are summed once.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, Labels: pod.Labels},
		Spec: corev1.PodSpec{
			NodeName:   pod.Spec.NodeName,
			Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})}}},
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if pod.Labels[kubevirtv1.AppLabel] == "virt-launcher" {
		out.Spec.NodeSelector = pod.Spec.NodeSelector
	}
	return out, nil
}
