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

// informed is a value derived from an informer's objects, recomputed on the first read after an
// event of that informer and swapped atomically. Admission reads it with one atomic load: no
// cache list (with its RESTMapper query and copies), no lock and no re-parse per request.
type informed[T any] struct {
	derive func(ctx context.Context) (*T, error)
	dirty  atomic.Bool
	mu     sync.Mutex
	v      atomic.Pointer[T]
}

func newInformed[T any](ctx context.Context, c cache.Cache, obj client.Object, derive func(ctx context.Context) (*T, error)) (*informed[T], error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, err
	}
	i := &informed[T]{derive: derive}
	i.dirty.Store(true)
	mark := func(any) { i.dirty.Store(true) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: mark, DeleteFunc: mark, UpdateFunc: func(_, obj any) { mark(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching %T: %w", obj, err)
	}
	return i, nil
}

// get returns the value, deriving it again after an event; a failed derivation is returned as an
// error and retried on the next read.
// Until the first derivation has stored a value, every reader takes the lock: a reader that saw
// the flag already cleared by the first deriver would otherwise read nothing.
func (i *informed[T]) get(ctx context.Context) (*T, error) {
	if !i.dirty.Load() {
		if v := i.v.Load(); v != nil {
			return v, nil
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.dirty.Swap(false) || i.v.Load() == nil {
		v, err := i.derive(ctx)
		if err != nil {
			i.dirty.Store(true)
			return nil, err
		}
		i.v.Store(v)
	}
	return i.v.Load(), nil
}

// settingsView is what admission reads of the two settings.
type settingsView struct {
	policy *settings.MigrationPolicy // nil: the default
	hash   string                    // the migration network's current hash, "" when disabled or invalid
}

// readSettings derives the settings view from r (the cache).
func readSettings(r client.Reader) func(ctx context.Context) (*settingsView, error) {
	return func(ctx context.Context) (*settingsView, error) {
		list := &v1beta1.SettingList{}
		if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		items := make([]any, len(list.Items))
		for i := range list.Items {
			items[i] = &list.Items[i]
		}
		return deriveSettings(items), nil
	}
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

// readKubeVirt derives the KubeVirt view from r (the cache).
func readKubeVirt(r client.Reader, namespace string) func(ctx context.Context) (*kubeVirtView, error) {
	return func(ctx context.Context) (*kubeVirtView, error) {
		kv, err := settings.KubeVirtCR(ctx, r, namespace)
		if err != nil {
			return nil, err
		}
		return &kubeVirtView{kv: kv}, nil
	}
}

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
