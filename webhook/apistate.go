package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIReader adapts a reader of the API server (a client, not a cache) to what the migration
// rules read: the API server has no index on a VirtualMachineInstanceMigration's spec.vmiName, so
// a list asking for it lists the namespace and keeps the matches. Every other read passes through.
func APIReader(r client.Reader) client.Reader { return apiReader{r} }

type apiReader struct{ client.Reader }

func (a apiReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	vmims, ok := list.(*kubevirtv1.VirtualMachineInstanceMigrationList)
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if !ok || lo.FieldSelector == nil {
		return a.Reader.List(ctx, list, opts...)
	}
	name, found := lo.FieldSelector.RequiresExactMatch(vmiNameIndex)
	if !found {
		return a.Reader.List(ctx, list, opts...)
	}
	lo.FieldSelector = nil
	if err := a.Reader.List(ctx, vmims, lo); err != nil {
		return err
	}
	kept := vmims.Items[:0]
	for _, m := range vmims.Items {
		if m.Spec.VMIName == name {
			kept = append(kept, m)
		}
	}
	vmims.Items = kept
	return nil
}

// ListNodes lists the nodes once, through r, as a NodeLister.
func ListNodes(ctx context.Context, r client.Reader) (NodeLister, error) {
	list := &corev1.NodeList{}
	if err := r.List(ctx, list); err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return func() []*corev1.Node { return nodes }, nil
}

// ListPods reads the cluster's active pods from r once, as the PodView of a preflight. A user who
// may not list pods gets a nil view: room on the nodes is then not judged, and says so.
func ListPods(ctx context.Context, r client.Reader) (PodView, error) {
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.MatchingFieldsSelector{Selector: activePods}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, err
	}
	pods := make(PodList, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}
