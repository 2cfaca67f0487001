package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

var _ = Describe("a node that joins before its cluster network is set up", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Fault caught: readiness judged for the whole cluster — one node added without the
	// network.harvesterhci.io/<cn> label made the network not Ready and every migration in the
	// cluster refused ("3 of 4 virt-handlers are on the migration network"), the evacuations of a
	// node drain included. Also caught: the new node offered as a target, or its own VMIs let
	// leave over a network it is not on.
	It("stops only the migrations it is part of; the others go on, and the status names it", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		newNode := cluster.NodeObject(cluster.NodeSpec{Name: "node-new"}) // only "mgmt"
		Expect(f.Client.Create(ctx, newNode)).To(Succeed())
		// f.DeleteNodes also force-deletes the node's pods, as the pod garbage collector would some
		// time later: a virt-handler pod left terminating on the gone node holds the next
		// virt-handler roll (maxUnavailable 1) past the cleanup's wait.
		DeferCleanup(func(ctx context.Context) { f.DeleteNodes(ctx, newNode.Name) })
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("False/" + netcontroller.ReasonNodesNotAttached))
			// Its virt-handler may have an address (the bridge plugin makes a bridge without uplink).
			g.Expect(setting(ctx).Status.Nodes).To(ContainElement(And(HaveField("Name", "node-new"), HaveField("Reason", netcontroller.ReasonNoClusterNetwork))))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())

		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-new", "node-new", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-to-new", "node-1", map[string]string{"kubernetes.io/hostname": "node-new"}))).To(Succeed())
		Eventually(func() string { // the VMIs reach the webhook's caches
			_, stderr, _ := f.Kubectl(vmimYAML(ns, "between-attached", "vm-a"), "create", "--dry-run=server", "-f", "-")
			return stderr
		}).WithTimeout(framework.Short).Should(BeEmpty(), "a migration between attached nodes is admitted")

		By("a target pod of vm-a keeps off node-new: the cluster network required, and node-new excluded as not attached")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "virt-launcher-vm-a-",
			Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "dry-run"},
			Annotations: map[string]string{kubevirtv1.DomainAnnotation: "vm-a"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "none"}}}}
		Expect(f.Client.Create(ctx, pod, client.DryRunAll)).To(Succeed())
		Expect(pod.Spec.Affinity).NotTo(BeNil())
		terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		Expect(terms).To(HaveLen(1))
		Expect(terms[0].MatchExpressions).To(ContainElement(corev1.NodeSelectorRequirement{Key: "network.harvesterhci.io/migration", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}))
		Expect(terms[0].MatchFields).To(ContainElement(corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-new"}}))

		_, stderr, err := f.Kubectl(vmimYAML(ns, "from-new", "vm-new"), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("migranet networkReady"))
		Expect(stderr).To(ContainSubstring("runs on node-new, which does not carry the cluster network migration"))

		_, stderr, err = f.Kubectl(vmimYAML(ns, "to-new", "vm-to-new"), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("migranet feasibleTarget"))
		Expect(stderr).NotTo(ContainSubstring("migranet networkReady"))
	})
})
