package netcontroller

import (
	"context"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IPPoolList is whereabouts' list kind for its per-range allocation pools.
var IPPoolList = schema.GroupVersionKind{Group: "whereabouts.cni.cncf.io", Version: "v1alpha1", Kind: "IPPoolList"}

// Pool is what the cleanup looks at in a whereabouts IPPool.
type Pool struct {
	Name  string
	Range string
	// PodRefs are the namespace/name of every allocation's pod.
	PodRefs []string
}

// StalePools names the pools migranet's virt-handlers left behind: pools whose range is not the
// current one (none when disabled), that hold at least one allocation, and whose every allocation
// belongs to a virt-handler pod of the KubeVirt namespace that no longer exists. A pool any other
// pod holds an address in is never touched; whereabouts recreates a pool on demand.
func StalePools(pools []Pool, current netip.Prefix, namespace string, podExists func(namespace, name string) bool) []string {
	var stale []string
	for _, p := range pools {
		if r, err := netip.ParsePrefix(p.Range); err == nil && current.IsValid() && r.Masked() == current.Masked() {
			continue
		}
		if len(p.PodRefs) == 0 {
			continue
		}
		ours := true
		for _, ref := range p.PodRefs {
			ns, name, ok := strings.Cut(ref, "/")
			if !ok || ns != namespace || !strings.HasPrefix(name, VirtHandlerValue+"-") || podExists(ns, name) {
				ours = false
				break
			}
		}
		if ours {
			stale = append(stale, p.Name)
		}
	}
	return stale
}

// cleanPools deletes stale whereabouts pools in namespace poolNamespace; without the whereabouts
// CRD there is nothing to do.
func (r *Controller) cleanPools(ctx context.Context, current netip.Prefix, podExists func(namespace, name string) bool) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(IPPoolList)
	if err := r.APIReader.List(ctx, list, client.InNamespace(r.WhereaboutsNamespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	pools := make([]Pool, 0, len(list.Items))
	for _, item := range list.Items {
		p := Pool{Name: item.GetName()}
		p.Range, _, _ = unstructured.NestedString(item.Object, "spec", "range")
		allocs, _, _ := unstructured.NestedMap(item.Object, "spec", "allocations")
		for _, a := range allocs {
			if m, ok := a.(map[string]any); ok {
				ref, _ := m["podref"].(string)
				p.PodRefs = append(p.PodRefs, ref)
			}
		}
		pools = append(pools, p)
	}
	for _, name := range StalePools(pools, current, r.KubeVirtNamespace, podExists) {
		ctrl.LoggerFrom(ctx).Info("deleting whereabouts IPPool left by virt-handlers of a previous migration network", "ippool", name)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: IPPoolList.Group, Version: IPPoolList.Version, Kind: "IPPool"})
		u.SetNamespace(r.WhereaboutsNamespace)
		u.SetName(name)
		if err := r.Client.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
