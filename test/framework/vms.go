package framework

import (
	"context"

	. "github.com/onsi/gomega" //nolint:revive // Gomega's DSL reads best unqualified
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StartEvacuableVM creates a VirtualMachine (runStrategy Always, evictionStrategy LiveMigrate:
// a drain migrates it) from tmpl's namespace, name and spec, with the template annotations given,
// and waits until its VMI runs on node.
func (f *Framework) StartEvacuableVM(ctx context.Context, tmpl *kubevirtv1.VirtualMachineInstance, node string, annotations map[string]string) {
	strategy := kubevirtv1.EvictionStrategyLiveMigrate
	spec := *tmpl.Spec.DeepCopy()
	spec.EvictionStrategy = &strategy
	always := kubevirtv1.RunStrategyAlways
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: tmpl.Namespace, Name: tmpl.Name},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &always, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       spec,
		}},
	}
	ExpectWithOffset(1, f.Client.Create(ctx, vm)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		v := &kubevirtv1.VirtualMachineInstance{}
		g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(vm), v)).To(Succeed())
		g.Expect(v.Status.Phase).To(Equal(kubevirtv1.Running), "VMI %s/%s phase", vm.Namespace, vm.Name)
		g.Expect(v.Status.NodeName).To(Equal(node))
	}).WithContext(ctx).WithTimeout(Long).Should(Succeed())
}

// DeleteVMs deletes the namespace's VirtualMachines and waits until their VMIs are gone. A spec
// whose drain was left unfinished calls it before the namespace's cleanup: the VMIs still marked
// for evacuation would have KubeVirt create migrations while that cleanup waits for them to end.
func (f *Framework) DeleteVMs(ctx context.Context, ns string) {
	vms := &kubevirtv1.VirtualMachineList{}
	ExpectWithOffset(1, f.Client.List(ctx, vms, client.InNamespace(ns))).To(Succeed())
	for i := range vms.Items {
		ExpectWithOffset(1, client.IgnoreNotFound(f.Client.Delete(ctx, &vms.Items[i]))).To(Succeed())
	}
	EventuallyWithOffset(1, func(g Gomega) {
		left := &kubevirtv1.VirtualMachineInstanceList{}
		g.Expect(f.Client.List(ctx, left, client.InNamespace(ns))).To(Succeed())
		g.Expect(left.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(Long).Should(Succeed())
}
