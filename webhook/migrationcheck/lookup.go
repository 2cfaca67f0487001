package migrationcheck

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// vmimByVMI indexes the VMIM informer's own store by namespace/spec.vmiName.
const vmimByVMI = "namespace/vmiName"

// lookup reads VMIs and VMIMs straight from their informers' stores: a key or index lookup, with
// none of the reflection, field-selector parsing and list copying of a cache Get or List, which
// cost admission more than its rules. The objects are the cache's, shared: read only.
type lookup struct {
	vmis, vmims toolscache.Indexer
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
	}}); err != nil {
		return nil, err
	}
	return &lookup{vmis: vmiSII.GetIndexer(), vmims: vmimSII.GetIndexer()}, nil
}

// vmi returns the VMI namespace/name, nil when there is none.
func (l *lookup) vmi(namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	obj, exists, err := l.vmis.GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, err
	}
	vmi, _ := obj.(*kubevirtv1.VirtualMachineInstance)
	return vmi, nil
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
