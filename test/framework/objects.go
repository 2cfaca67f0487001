package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// VMI builds a disk-less VirtualMachineInstance with 128 MiB of memory and an optional
// nodeSelector, meant to run on node: with KubeVirt running, its virt-launcher pod prefers that
// node (a preference, so migrations may leave it) and KubeVirt's admission replaces the status;
// with a simulated KubeVirt the status says it runs there, as virt-handler would report it.
func VMI(ns, name, node string, nodeSelector map[string]string) *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			NodeSelector: nodeSelector,
			Domain: kubevirtv1.DomainSpec{
				Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
				Devices:   kubevirtv1.Devices{},
			},
		},
	}
	if node != "" {
		vmi.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}},
			}},
		}}
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
