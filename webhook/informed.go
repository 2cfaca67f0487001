package webhook

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/validation/field"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// informed is a value derived from one informer's store, recomputed on the first read after an
// event of that informer and swapped atomically. Admission reads it with one atomic load: no
// cache lookup (with its RESTMapper query), no list copy, no lock and no re-parse per request.
type informed[T any] struct {
	store  toolscache.Store
	derive func(items []any) *T
	dirty  atomic.Bool
	mu     sync.Mutex
	v      atomic.Pointer[T]
}

func newInformed[T any](ctx context.Context, c cache.Cache, obj client.Object, derive func([]any) *T) (*informed[T], error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, err
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the %T informer (%T) exposes no store", obj, inf)
	}
	i := &informed[T]{store: withStore.GetStore(), derive: derive}
	i.dirty.Store(true)
	mark := func(any) { i.dirty.Store(true) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: mark, DeleteFunc: mark, UpdateFunc: func(_, obj any) { mark(obj) },
	}); err != nil {
		return nil, err
	}
	return i, nil
}

func (i *informed[T]) get() *T {
	if i.dirty.Load() {
		i.mu.Lock()
		if i.dirty.Swap(false) {
			i.v.Store(i.derive(i.store.List()))
		}
		i.mu.Unlock()
	}
	return i.v.Load()
}

// settingsView is what admission reads of the two settings.
type settingsView struct {
	policy *settings.MigrationPolicy // nil: the default
	hash   string                    // the migration network's current hash, "" when disabled or invalid
}

func deriveSettings(items []any) *settingsView {
	v := &settingsView{}
	for _, it := range items {
		s, ok := it.(*v1beta1.Setting)
		if !ok {
			continue
		}
		switch s.Name {
		case v1beta1.MigrationPolicy:
			v.policy, _ = settings.ParseMigrationPolicy(settings.EffectiveValue(s), field.NewPath("value"))
		case v1beta1.MigrationNetwork:
			v.hash = settings.EffectiveNetwork(s).Hash
		}
	}
	return v
}

// kubeVirtView holds the KubeVirt CR in force (settings.OldestKubeVirtOf), nil for none.
type kubeVirtView struct{ kv *kubevirtv1.KubeVirt }

func deriveKubeVirt(namespace string) func(items []any) *kubeVirtView {
	return func(items []any) *kubeVirtView {
		kvs := make([]*kubevirtv1.KubeVirt, 0, len(items))
		for _, it := range items {
			if kv, ok := it.(*kubevirtv1.KubeVirt); ok && kv.Namespace == namespace {
				kvs = append(kvs, kv)
			}
		}
		return &kubeVirtView{kv: settings.OldestKubeVirtOf(kvs)}
	}
}
