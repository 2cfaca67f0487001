package migrationcheck

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// newDerived is an informed value marked stale by calling its mark function (the caller wires the
// events that matter), not by every event of one informer.
func newDerived[T any](derive func(ctx context.Context) (*T, error)) *informed[T] {
	i := &informed[T]{derive: derive}
	i.dirty.Store(true)
	return i
}

// mark says the value must be derived again before its next read.
func (i *informed[T]) mark() { i.dirty.Store(true) }

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
