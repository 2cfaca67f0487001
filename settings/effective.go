package settings

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Effective is what a vm-migration-network Setting asks for, derived in one place: the effective
// value (EffectiveValue) parsed, its hash and the name of the NAD it renders to.
type Effective struct {
	// Network is the parsed value; nil when the migration network is disabled or the value does
	// not parse.
	Network *MigrationNetwork
	// Hash and NAD are Network's hash and NAD name; "" when Network is nil.
	Hash, NAD string
	// Errs are the parse errors under "value" (bounded); none when disabled.
	Errs field.ErrorList
}

// Disabled reports whether the setting asks for no migration network: an empty effective value.
// An unparsable value is neither disabled nor enabled: Errs says why.
func (e Effective) Disabled() bool { return e.Network == nil && len(e.Errs) == 0 }

// EffectiveNetwork parses s's effective value and derives its hash and NAD name. A nil s is
// disabled.
func EffectiveNetwork(s *v1beta1.Setting) Effective {
	m, errs := ParseMigrationNetwork(EffectiveValue(s), field.NewPath("value"))
	if len(errs) > 0 || m == nil {
		return Effective{Errs: errs}
	}
	h := m.Hash()
	return Effective{Network: m, Hash: h, NAD: NADName(h)}
}

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
	return OldestKubeVirt(kvs.Items), nil
}

// OldestKubeVirt is the CR in force among items (see KubeVirtCR); nil for none.
func OldestKubeVirt(items []kubevirtv1.KubeVirt) *kubevirtv1.KubeVirt {
	ptrs := make([]*kubevirtv1.KubeVirt, len(items))
	for i := range items {
		ptrs[i] = &items[i]
	}
	return OldestKubeVirtOf(ptrs)
}

// OldestKubeVirtOf is OldestKubeVirt over pointers (an informer store's objects); nil entries are
// skipped.
func OldestKubeVirtOf(kvs []*kubevirtv1.KubeVirt) *kubevirtv1.KubeVirt {
	var in *kubevirtv1.KubeVirt
	for _, kv := range kvs {
		if kv == nil {
			continue
		}
		if in == nil || kv.CreationTimestamp.Before(&in.CreationTimestamp) ||
			kv.CreationTimestamp.Equal(&in.CreationTimestamp) && strings.Compare(kv.Name, in.Name) < 0 {
			in = kv
		}
	}
	return in
}
