package migrationcheck

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TrimVMI is the cache transform for VirtualMachineInstances: it keeps only what the migration
// rules read (identity, status.nodeName, phase and migrationState, and what KubeVirt renders the
// migration target pod's scheduling constraints from: see targetpod.Render), so that 10,000 VMIs
// cost kilobytes each less in every replica.
func TrimVMI(obj any) (any, error) {
	vmi, ok := obj.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return obj, nil
	}
	spec := &vmi.Spec
	out := &kubevirtv1.VirtualMachineInstance{
		TypeMeta: vmi.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: vmi.Name, Namespace: vmi.Namespace, UID: vmi.UID,
			ResourceVersion: vmi.ResourceVersion, DeletionTimestamp: vmi.DeletionTimestamp,
		},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			NodeSelector: spec.NodeSelector, Affinity: spec.Affinity, Tolerations: spec.Tolerations,
			TopologySpreadConstraints: spec.TopologySpreadConstraints, Architecture: spec.Architecture, PriorityClassName: spec.PriorityClassName,
			Domain: kubevirtv1.DomainSpec{CPU: spec.Domain.CPU, Machine: spec.Domain.Machine},
		},
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			NodeName: vmi.Status.NodeName, Phase: vmi.Status.Phase, MigrationState: vmi.Status.MigrationState,
			Machine: vmi.Status.Machine, TopologyHints: vmi.Status.TopologyHints,
		},
	}
	if f := spec.Domain.Features; f != nil && f.Hyperv != nil {
		out.Spec.Domain.Features = &kubevirtv1.Features{Hyperv: f.Hyperv}
	}
	return out, nil
}
