package framework

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// VMI builds a disk-less VirtualMachineInstance that runs on node (status set, as virt-handler
// would report it), with an optional nodeSelector.
func VMI(ns, name, node string, nodeSelector map[string]string) *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			NodeSelector: nodeSelector,
			Domain: kubevirtv1.DomainSpec{
				Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{}},
				Devices:   kubevirtv1.Devices{},
			},
		},
	}
	if node != "" {
		vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node}
	}
	return vmi
}

// VMIM builds a migration of vmi, with an optional addedNodeSelector.
func VMIM(ns, name, vmi string, added map[string]string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi, AddedNodeSelector: added},
	}
}
