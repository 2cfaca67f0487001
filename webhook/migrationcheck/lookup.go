package migrationcheck

import (
	"context"
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// vmimByVMI indexes the VMIM informer's own store by namespace/spec.vmiName; vmimUnfinished
// holds the VMIMs that have not reached Succeeded or Failed, under unfinishedKey.
const (
	vmimByVMI      = "namespace/vmiName"
	vmimUnfinished = "unfinished"
	unfinishedKey  = "1"
)

// lookup reads VMIs and VMIMs straight from their informers' stores: a key or index lookup, with
// none of the reflection, field-selector parsing and list copying of a cache Get or List, which
// cost admission more than its rules. The objects are the cache's, shared: read only.
type lookup struct {
	vmis, vmims     toolscache.Indexer
	vmiInf, vmimInf toolscache.SharedIndexInformer
}

func newLookup(ctx context.Context, c cache.Cache) (*lookup, error) {
	vmiInf, err := c.GetInformer(ctx, &kubevirtv1.VirtualMachineInstance{})
	if err != nil {
		return nil, err
	}
	vmimInf, err := c.GetInformer(ctx, &kubevirtv1.VirtualMachineInstanceMigration{})
	if err != nil {
		return nil, err
	}
	vmiSII, ok1 := vmiInf.(toolscache.SharedIndexInformer)
	vmimSII, ok2 := vmimInf.(toolscache.SharedIndexInformer)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("the VMI and VMIM informers (%T, %T) have no indexer", vmiInf, vmimInf)
	}
	if err := vmimSII.AddIndexers(toolscache.Indexers{vmimByVMI: func(obj any) ([]string, error) {
		if m, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
		}
		return nil, nil
	}, vmimUnfinished: func(obj any) ([]string, error) {
		if m, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration); ok && Unfinished(m) {
			return []string{unfinishedKey}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	return &lookup{vmis: vmiSII.GetIndexer(), vmims: vmimSII.GetIndexer(), vmiInf: vmiSII, vmimInf: vmimSII}, nil
}

// unfinished returns the VMIMs that have not reached Succeeded or Failed.
func (l *lookup) unfinished() []*kubevirtv1.VirtualMachineInstanceMigration {
	items, err := l.vmims.ByIndex(vmimUnfinished, unfinishedKey)
	if err != nil {
		return nil
	}
	out := make([]*kubevirtv1.VirtualMachineInstanceMigration, 0, len(items))
	for _, it := range items {
		if m, ok := it.(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			out = append(out, m)
		}
	}
	return out
}

// onTrafficEvent calls fn on every VMIM event and on the VMI events that move a migration state.
func (l *lookup) onTrafficEvent(fn func()) error {
	if _, err := l.vmimInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { fn() }, DeleteFunc: func(any) { fn() }, UpdateFunc: func(any, any) { fn() },
	}); err != nil {
		return err
	}
	_, err := l.vmiInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if v, ok := o.(*kubevirtv1.VirtualMachineInstance); ok && v.Status.MigrationState != nil {
				fn()
			}
		},
		DeleteFunc: func(any) { fn() },
		UpdateFunc: func(o, n any) {
			if migrationStateChanged(o, n) {
				fn()
			}
		},
	})
	return err
}

// vmi returns the VMI namespace/name from the store, nil when the store has none.
func (l *lookup) vmi(namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	obj, exists, err := l.vmis.GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, err
	}
	vmi, _ := obj.(*kubevirtv1.VirtualMachineInstance)
	return vmi, nil
}

// confirmTimeout bounds the read that confirms a store miss: well inside the API server's
// webhook timeout (10 s by default), so a slow API server leaves the store's answer, not a review
// the API server gives up on.
const confirmTimeout = 2 * time.Second

// confirmedVMI is vmi with a store miss confirmed by api (nil: not confirmed) before it is called
// an absence: the store can lag behind a VMI created a moment ago (seen in CI: a Running VMI,
// read by the test, not yet in the webhook's store, and its migration refused as "not found").
// A miss is rare (the VMI must exist for any migration to succeed), so the read costs the hot
// path nothing. When the read fails (an older ClusterRole without get, mid-upgrade) or takes longer
// than confirmTimeout, the store's miss stands, as it did before the read was made.
func (l *lookup) confirmedVMI(ctx context.Context, api client.Reader, namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := l.vmi(namespace, name)
	if vmi != nil || err != nil || api == nil || name == "" {
		return vmi, err
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	live := &kubevirtv1.VirtualMachineInstance{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		return nil, nil
	}
	return live, nil
}

// migrationsOf returns the VMIMs of VMI namespace/name.
func (l *lookup) migrationsOf(namespace, name string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	items, err := l.vmims.ByIndex(vmimByVMI, namespace+"/"+name)
	if err != nil {
		return nil, err
	}
	out := make([]*kubevirtv1.VirtualMachineInstanceMigration, 0, len(items))
	for _, it := range items {
		if m, ok := it.(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			out = append(out, m)
		}
	}
	return out, nil
}
