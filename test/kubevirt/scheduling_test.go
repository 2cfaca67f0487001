package kubevirt

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// These specs hold migranet's feasibleTarget rule against what really happens to KubeVirt's
// target pod: the real virt-controller renders it, the real kube-scheduler places it. For each
// constraint, a migration migranet refuses is shown to leave its target pod Pending when migranet
// only warns, and a migration it admits is shown to complete.
var _ = Describe("target feasibility as kube-scheduler places KubeVirt's target pod", func() {
	BeforeEach(func() { DeferCleanup(resetSettings) })

	// Fault caught: taints not judged (every other node tainted, the migration admitted, its target
	// pod Pending until KubeVirt gives up), or tolerations not honoured (a VMI that tolerates them
	// refused).
	It("refuses a VMI that does not tolerate the other nodes' taints, and admits one that does", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "plain", "node-1", nil))
		tolerant := framework.VMI(ns, "tolerant", "node-1", nil)
		tolerant.Spec.Tolerations = []corev1.Toleration{{Key: "migranet.test/dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		f.StartVMI(ctx, tolerant)
		for _, n := range []string{"node-2", "node-3"} {
			patchNode(ctx, n, func(node *corev1.Node) {
				node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "migranet.test/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
			}, func(node *corev1.Node) {
				node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "migranet.test/dedicated" })
			})
		}
		refusedThenPending(ctx, ns, "plain",
			"0 of 3 nodes can take its target pod: 2 have taint migranet.test/dedicated=db:NoSchedule that the VMI does not tolerate, 1 is its source node node-1",
			"untolerated taint")
		admittedAndCompleted(ctx, ns, "tolerant")
	})

	// Fault caught: the VMI's required node affinity not judged.
	It("refuses a VMI whose required node affinity matches only its node, and admits one whose affinity matches another", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, withHostAffinity(framework.VMI(ns, "pinned", "node-1", nil), "node-1"))
		f.StartVMI(ctx, withHostAffinity(framework.VMI(ns, "paired", "node-1", nil), "node-1", "node-3"))
		refusedThenPending(ctx, ns, "pinned",
			"0 of 3 nodes can take its target pod: 2 do not match the VMI's required node affinity, 1 is its source node node-1",
			"didn't match Pod's node affinity/selector")
		Expect(admittedAndCompleted(ctx, ns, "paired")).To(Equal("node-3"))
	})

	// Fault caught: KubeVirt's CPU-model node selector not rendered into the target pod's
	// constraints (cpu-model.node.kubevirt.io/<model>, which virt-handler's node labeller sets).
	It("refuses a VMI whose CPU model no other node offers, and admits it once another node is labelled with it", func(ctx context.Context) {
		model := "cpu-model.node.kubevirt.io/Skylake-Server"
		label := func(n *corev1.Node) { n.Labels[model] = "true" }
		unlabel := func(n *corev1.Node) { delete(n.Labels, model) }
		patchNode(ctx, "node-1", label, unlabel)
		ns := f.Namespace(ctx)
		vm := framework.VMI(ns, "skylake", "node-1", nil)
		vm.Spec.Domain.CPU = &kubevirtv1.CPU{Model: "Skylake-Server"}
		f.StartVMI(ctx, vm)
		refusedThenPending(ctx, ns, "skylake",
			"0 of 3 nodes can take its target pod: 2 lack label "+model+"=true (the VMI's CPU model Skylake-Server), 1 is its source node node-1",
			"didn't match Pod's node affinity/selector")
		patchNode(ctx, "node-3", label, unlabel)
		Expect(admittedAndCompleted(ctx, ns, "skylake")).To(Equal("node-3"))
	})

	// Fault caught: room on the node not judged (what the node's pods request not subtracted from
	// its allocatable), or the target pod's requests not known.
	It("refuses a migration no other node has the memory for, and admits it once one has", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "big", "node-1", nil))
		fillers := []*corev1.Pod{fillMemory(ctx, ns, "node-2"), fillMemory(ctx, ns, "node-3")}
		refusedThenPending(ctx, ns, "big", "0 of 3 nodes can take its target pod: 2 have too little memory free (the target pod requests ", "Insufficient memory")
		Expect(f.Client.Delete(ctx, fillers[1], client.GracePeriodSeconds(0))).To(Succeed())
		Expect(admittedAndCompleted(ctx, ns, "big")).To(Equal("node-3"))
	})
})

// refusedThenPending creates a migration of vmi that migranet must refuse with refusal, then the
// same with feasibleTarget in warn mode: KubeVirt's target pod must then stay Pending with the
// scheduler's reason containing unschedulable. It cancels that migration and puts the policy back.
func refusedThenPending(ctx context.Context, ns, vmi, refusal, unschedulable string) {
	GinkgoHelper()
	// What makes the migration infeasible (a node label, a filler pod) reaches migranet through the
	// informers of each replica; a create sent a moment after it raced them (seen once in CI). Wait
	// until server-side dry runs are refused in a row, as the create must be: with room or labels
	// not judged they never are, and the spec still fails.
	Eventually(func(g Gomega) {
		_, stderr, err := f.Kubectl(vmimYAML(ns, "refused", vmi), "create", "--dry-run=server", "-f", "-")
		g.Expect(err).To(HaveOccurred(), "migranet admitted a migration that cannot be scheduled")
		g.Expect(stderr).To(ContainSubstring(refusal))
	}).WithContext(ctx).WithTimeout(framework.Short).MustPassRepeatedly(3).Should(Succeed())
	_, stderr, err := f.Kubectl(vmimYAML(ns, "refused", vmi), "create", "-f", "-")
	Expect(err).To(HaveOccurred(), "migranet admitted a migration that cannot be scheduled")
	Expect(stderr).To(ContainSubstring("migranet feasibleTarget: no node can receive VirtualMachineInstance " + ns + "/" + vmi + ": " + refusal))

	By("with feasibleTarget in warn mode, KubeVirt's target pod stays Pending")
	warnOnly("feasibleTarget")
	Expect(createWarned(vmimYAML(ns, "warned", vmi))).
		To(ContainSubstring("Warning: migranet feasibleTarget: no node can receive VirtualMachineInstance " + ns + "/" + vmi + ": " + refusal))
	uid := migration(ctx, ns, "warned").UID
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.MigrationJobLabel: string(uid)})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "virt-controller's target pod")
		p := pods.Items[0]
		g.Expect(p.Spec.NodeName).To(BeEmpty())
		var msg string
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
			}
		}
		g.Expect(msg).To(ContainSubstring(unschedulable), "the scheduler's reason")
		GinkgoWriter.Printf("target pod %s Pending: %s\n", p.Name, msg)
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	Expect(f.Client.Delete(ctx, migration(ctx, ns, "warned"))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "warned"}, &kubevirtv1.VirtualMachineInstanceMigration{}))
	}).WithContext(ctx).WithTimeout(framework.Long).Should(BeTrue(), "the cancelled migration gone")
	f.SetSetting(ctx, v1beta1.MigrationPolicy, "")
}

// admittedAndCompleted creates a migration of vmi that migranet must admit without a warning and
// waits until KubeVirt completes it; it returns the node the VMI moved to.
func admittedAndCompleted(ctx context.Context, ns, vmi string) string {
	GinkgoHelper()
	name := "move-" + vmi
	// createWarned retries until migranet's caches hold the change that admits it.
	Expect(createWarned(vmimYAML(ns, name, vmi))).NotTo(ContainSubstring("Warning"))
	Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, name).
		WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
	ms := vmiStatus(ctx, ns, vmi).MigrationState
	Expect(ms).NotTo(BeNil())
	return ms.TargetNode
}

func vmiStatus(ctx context.Context, ns, name string) kubevirtv1.VirtualMachineInstanceStatus {
	return vmi(ctx, ns, name).Status
}

// withHostAffinity gives vm a required node affinity to the named hosts.
func withHostAffinity(vm *kubevirtv1.VirtualMachineInstance, hosts ...string) *kubevirtv1.VirtualMachineInstance {
	vm.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: hosts}}}}}
	return vm
}

// fillMemory binds a pod to node that requests all the memory the node's pods leave free but
// 64Mi, less than any virt-launcher requests; it is deleted after the spec.
func fillMemory(ctx context.Context, ns, node string) *corev1.Pod {
	GinkgoHelper()
	n := &corev1.Node{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
	// Earlier specs' pods leave with their namespaces after the spec ends. A filler sized while one
	// is still on the node leaves room once it is gone, and the migration the spec must see refused
	// fits (seen in CI, depending on the spec order): wait until none is left.
	pods := &corev1.PodList{}
	Eventually(func(g Gomega) {
		g.Expect(f.Client.List(ctx, pods)).To(Succeed())
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != node || p.Namespace == ns {
				continue
			}
			g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s/%s on %s is going", p.Namespace, p.Name, node)
			pns := &corev1.Namespace{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: p.Namespace}, pns)).To(Succeed())
			g.Expect(pns.DeletionTimestamp).To(BeNil(), "pod %s/%s on %s: its namespace is going", p.Namespace, p.Name, node)
		}
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	free := n.Status.Allocatable.Memory().DeepCopy()
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		free.Sub(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[corev1.ResourceMemory])
	}
	free.Sub(resource.MustParse("64Mi"))
	filler := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "filler-" + node},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "filler", Image: "filler",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: free}}}}}}
	Expect(f.Client.Create(ctx, filler)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, filler, client.GracePeriodSeconds(0)))).To(Succeed())
	})
	GinkgoWriter.Printf("%s: filler requests %s of memory\n", node, free.String())
	return filler
}
