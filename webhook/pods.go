package webhook

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
	// usage maps a node's name to its *NodeUsage; an event on one of its pods drops the entry.
	// A sync.Map: admission reads it for every candidate node from every worker, lock-free.
	usage sync.Map
	// gen counts pod events: a sum computed while one arrived is not kept, as it may predate it.
	gen atomic.Uint64
	// indexer is the pod informer's, set by Start before the cache starts.
	indexer atomic.Pointer[toolscache.Indexer]
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
	if err := sii.AddIndexers(toolscache.Indexers{podNodeIndex: byNode, podCreatedByIndex: byCreator}); err != nil {
		return err
	}
	indexer := sii.GetIndexer()
	p.indexer.Store(&indexer)
	forget := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			p.gen.Add(1)
			p.usage.Delete(pod.Spec.NodeName)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: forget, DeleteFunc: forget,
		UpdateFunc: func(oldObj, newObj any) { forget(oldObj); forget(newObj) },
	})
	return err
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

// OfVMI implements PodView.
func (p *PodCache) OfVMI(uid types.UID) []*corev1.Pod {
	return p.byIndex(podCreatedByIndex, string(uid))
}

// Usage implements PodView, summing the node's pods once per change of them.
func (p *PodCache) Usage(node string) NodeUsage {
	if u, ok := p.usage.Load(node); ok {
		return *u.(*NodeUsage)
	}
	gen := p.gen.Load()
	u := sumUsage(p.byIndex(podNodeIndex, node))
	if p.gen.Load() == gen {
		p.usage.Store(node, &u)
		if p.gen.Load() != gen { // an event came between the check and the store
			p.usage.CompareAndDelete(node, &u)
		}
	}
	return u
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
