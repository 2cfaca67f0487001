package clusterread

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
)

// KubeVirtCR reads the KubeVirt CR in force from namespace: nil, nil when there is none.
// KubeVirt allows one CR (virt-operator refuses to create a second), but a race or a bypassed
// webhook can leave several: then the oldest one (creation time, then name) is the CR in force,
// whatever order the list comes in, so every migranet component agrees on it. opts are added to
// the List (e.g. client.UnsafeDisableDeepCopy for a read-only look at a cache).
func KubeVirtCR(ctx context.Context, r client.Reader, namespace string, opts ...client.ListOption) (*kubevirtv1.KubeVirt, error) {
	kvs := &kubevirtv1.KubeVirtList{}
	if err := r.List(ctx, kvs, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing KubeVirt CRs in %s: %w", namespace, err)
	}
	return settings.OldestKubeVirt(kvs.Items), nil
}
