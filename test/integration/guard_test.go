package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// guardPod is a pod of ns asking Multus for networks through annotations.
func guardPod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

// multusVMI is a VMI of ns with a bridge interface on the Multus network networkName.
func multusVMI(ns, name, networkName string) *kubevirtv1.VirtualMachineInstance {
	vmi := framework.VMI(ns, name, "", nil)
	vmi.Spec.Networks = []kubevirtv1.Network{
		{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
		{Name: "extra", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: networkName}}},
	}
	vmi.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
		{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
		{Name: "extra", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
	}
	return vmi
}

// multusVM is a VirtualMachine whose template is multusVMI.
func multusVM(ns, name, networkName string) *kubevirtv1.VirtualMachine {
	vmi := multusVMI(ns, name, networkName)
	strategy := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &strategy,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: vmi.Spec}},
	}
}

// guardNames is the guard policies' parameter: the NAD names they protect.
func guardNames(ctx context.Context) string {
	cm := &corev1.ConfigMap{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet-migration-networks"}, cm)).To(Succeed())
	return cm.Data["names"]
}

// withoutPodGuard runs create with the pods guard policy unbound, as an admin would to let a pod
// attach the migration network (or as a cluster looked before migranet's guard), and binds it
// again: re-applying the manifests, then waiting until a dry-run attach is refused.
func withoutPodGuard(ctx context.Context, create func()) {
	GinkgoHelper()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "migranet-migration-network-pods"}}
	Expect(f.Client.Delete(ctx, binding)).To(Succeed())
	names := strings.Fields(guardNames(ctx))
	Expect(names).NotTo(BeEmpty(), "no migration NAD to guard")
	probe := guardPod(f.Namespace(ctx), "probe", map[string]string{"k8s.v1.cni.cncf.io/networks": cluster.KubeVirtNamespace + "/" + names[0]})
	Eventually(func() error { return f.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).
		WithContext(ctx).WithTimeout(framework.Short).Should(Succeed(), "the unbound policy still refuses")
	create()
	Expect(f.Reinstall(ctx)).To(Succeed())
	Eventually(func() error { return f.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).
		WithContext(ctx).WithTimeout(framework.Short).Should(MatchError(ContainSubstring("carries live migrations only")))
}

// expectGuardRefusal expects err to be the guard policy's refusal naming nad.
func expectGuardRefusal(err error, nad string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "created, but it asks for the migration network")
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "403 Forbidden, got %v", err)
	Expect(err.Error()).To(And(ContainSubstring("migranet"), ContainSubstring(nad), ContainSubstring("carries live migrations only")))
}

var _ = Describe("the migration network's guard", Ordered, func() {
	var nad string
	BeforeAll(func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		nad = kubeVirtNetwork(ctx)
		Expect(nad).NotTo(BeEmpty())
	})
	AfterAll(func(ctx context.Context) { resetToPodNetwork(ctx) })

	// Every spelling Multus accepts for a reference to kubevirt/<nad>, and the admitted neighbours.
	// The fault it catches: a spelling the policy misses (a VM on the migration VLAN), or a policy
	// that refuses what is not the migration network.
	spellings := func(ctx context.Context, ns string) {
		GinkgoHelper()
		kv := cluster.KubeVirtNamespace
		for i, a := range []map[string]string{
			{"k8s.v1.cni.cncf.io/networks": kv + "/" + nad},
			{"k8s.v1.cni.cncf.io/networks": kv + "/" + nad + "@mig"},
			{"k8s.v1.cni.cncf.io/networks": "lan, " + kv + "/" + nad + " "},
			{"k8s.v1.cni.cncf.io/networks": fmt.Sprintf(`[{"name":%q,"namespace":%q,"interface":"mig"}]`, nad, kv)},
			{"k8s.v1.cni.cncf.io/networks": fmt.Sprintf(`[{"namespace":%q,"name":%q}]`, kv, nad)},
			{"v1.multus-cni.io/default-network": kv + "/" + nad},
		} {
			expectGuardRefusal(f.Client.Create(ctx, guardPod(ns, fmt.Sprintf("pod-%d", i), a)), nad)
		}
		expectGuardRefusal(f.Client.Create(ctx, multusVMI(ns, "vmi", kv+"/"+nad)), nad)
		expectGuardRefusal(f.Client.Create(ctx, multusVM(ns, "vm", kv+"/"+nad)), nad)
		// A bare name means the NAD of the object's own namespace.
		expectGuardRefusal(f.Client.Create(ctx, guardPod(kv, "bare", map[string]string{"k8s.v1.cni.cncf.io/networks": nad}), client.DryRunAll), nad)
		expectGuardRefusal(f.Client.Create(ctx, multusVMI(kv, "bare", nad), client.DryRunAll), nad)

		Expect(f.Client.Create(ctx, guardPod(ns, "own-nad-same-name", map[string]string{"k8s.v1.cni.cncf.io/networks": nad}))).To(Succeed())
		Expect(f.Client.Create(ctx, guardPod(ns, "other-nad", map[string]string{"k8s.v1.cni.cncf.io/networks": kv + "/lan"}))).To(Succeed())
		Expect(f.Client.Create(ctx, guardPod(ns, "no-networks", nil))).To(Succeed())
		Expect(f.Client.Create(ctx, multusVMI(ns, "lan-vmi", kv+"/lan"))).To(Succeed())
		Expect(f.Client.Create(ctx, multusVM(ns, "lan-vm", ns+"/lan"))).To(Succeed())
	}

	It("refuses every spelling of the migration NAD for pods, VMIs and VMs in any namespace, and admits the rest", func(ctx context.Context) {
		spellings(ctx, f.Namespace(ctx))
		By("the virt-handler rollout onto the network was not refused: every virt-handler is Ready on it")
		for _, p := range virtHandlers(ctx) {
			Expect(podReady(&p)).To(BeTrue(), "%s not ready", p.Name)
		}
	})

	It("still refuses them with every migranet replica stopped", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		f.StopReplicas()
		DeferCleanup(func(ctx context.Context) {
			Expect(f.StartReplicas(ctx)).To(Succeed())
			Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		})
		spellings(ctx, ns)
	})

	// Issue 52: the NAD in force is guarded by the API server itself (policy
	// migranet-migration-network-in-force, the KubeVirt CR its parameter), so with migranet down a
	// restarting virt-handler still finds it; a NAD no longer in force is deletable at once, even
	// right after the CR moved away from it (Harvester's removeOldNad never retries).
	It("refuses deleting the NAD in force with every migranet replica stopped, and never a NAD the KubeVirt CR just moved away from", func(ctx context.Context) {
		f.StopReplicas()
		DeferCleanup(func(ctx context.Context) {
			f.SetKubeVirtMigrationNetwork(ctx, nad)
			Expect(f.StartReplicas(ctx)).To(Succeed())
			Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		})
		err := f.Client.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: nad}}, client.DryRunAll)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting the NAD in force with migranet down: %v", err)
		Expect(err.Error()).To(And(ContainSubstring(nad), ContainSubstring("spec.configuration.migrations.network")))
		By("the near misses: a NAD of that name in another namespace, a NAD in the KubeVirt namespace not in force")
		ns := f.Namespace(ctx)
		for _, n := range []*nadv1.NetworkAttachmentDefinition{
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nad}, Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge"}`}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: "storage"}, Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge"}`}},
		} {
			Expect(f.Client.Create(ctx, n)).To(Succeed())
			Expect(f.Client.Delete(ctx, n)).To(Succeed(), "%s/%s is not in force", n.Namespace, n.Name)
		}
		// The policy's parameter (the CR as the API server's informer holds it) may trail the CR
		// update by milliseconds: seen in CI as Harvester's delete refused, its range change stuck.
		By("Harvester moving the KubeVirt CR to a NAD it rendered and deleting the old one right after, as its service account, 30 times: never refused")
		harvester, err := env.AsHarvester(ctx, f.Client, f.Config, client.Options{Scheme: f.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		previous := nad
		for i := range 30 {
			next := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: fmt.Sprintf("owner-%d", i),
				Annotations: map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"}},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge"}`}}
			Expect(harvester.Create(ctx, next)).To(Succeed())
			f.SetKubeVirtMigrationNetwork(ctx, next.Name)
			if previous != nad {
				Expect(harvester.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: previous}})).
					To(Succeed(), "Harvester's delete of %s right after the KubeVirt CR moved to %s (round %d)", previous, next.Name, i)
			}
			previous = next.Name
		}
		f.SetKubeVirtMigrationNetwork(ctx, nad)
		Expect(harvester.Delete(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: previous}})).To(Succeed())
	})

	It("refuses an update that adds the network, and leaves an object that had it before alone", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		ref := map[string]string{"k8s.v1.cni.cncf.io/networks": cluster.KubeVirtNamespace + "/" + nad}
		By("an offender from before the guard: a pod attaches while the pods policy is unbound")
		withoutPodGuard(ctx, func() { Expect(f.Client.Create(ctx, guardPod(ns, "before", ref))).To(Succeed()) })

		By("the leader finds the offender and reports it, without touching it")
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionExclusive).WithTimeout(framework.Short).
			Should(Equal("False/" + netcontroller.ReasonForeignAttached))
		Expect(conditionMessage(ctx, v1beta1.ConditionExclusive)).To(ContainSubstring(ns + "/before"))
		Eventually(func() []string {
			events := &corev1.EventList{}
			Expect(f.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "before" {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).WithContext(ctx).WithTimeout(framework.Short).Should(ContainElement(netcontroller.EventForeignAttachment))
		code, stdout, stderr := migranetStatus(ctx, "-n", ns)
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(ContainSubstring("NOT EXCLUSIVE: 1 pods and 0 VMIs"))

		By("the offender's other changes pass; a pod that adds the network is refused")
		before := &corev1.Pod{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "before"}, before)).To(Succeed())
		patch := client.MergeFrom(before.DeepCopy())
		before.Labels = map[string]string{"touched": "yes"}
		Expect(f.Client.Patch(ctx, before, patch)).To(Succeed())
		later := guardPod(ns, "later", nil)
		Expect(f.Client.Create(ctx, later)).To(Succeed())
		patch = client.MergeFrom(later.DeepCopy())
		later.Annotations = ref
		expectGuardRefusal(f.Client.Patch(ctx, later, patch), nad)

		By("once the offender is gone, the network is exclusive again")
		Expect(f.Client.Delete(ctx, before)).To(Succeed()) // gracefully: whereabouts releases its address
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionExclusive).WithTimeout(framework.Short).
			Should(Equal("True/" + netcontroller.ReasonExclusive))
	})

	It("names the new NAD in its parameter before the NAD exists when the range changes", func(ctx context.Context) {
		next := `{"clusterNetwork":"migration","vlan":100,"range":"10.66.0.0/24"}`
		setValue(ctx, next)
		// Poll the NADs; the moment a new one is seen, the parameter must already name it (it is
		// written first, and a read after seeing the NAD sees every earlier write).
		var created string
		Eventually(func(g Gomega) {
			for _, n := range managedNADs(ctx) {
				if n != nad {
					created = n
				}
			}
			g.Expect(created).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(framework.Long).WithPolling(5 * time.Millisecond).Should(Succeed())
		Expect(guardNames(ctx)).To(ContainSubstring(created), "NAD %s existed before the guard named it", created)
		waitReady(ctx, netcontroller.ReasonReady)
		ns := f.Namespace(ctx)
		expectGuardRefusal(f.Client.Create(ctx, guardPod(ns, "new", map[string]string{"k8s.v1.cni.cncf.io/networks": cluster.KubeVirtNamespace + "/" + created})), created)
		Eventually(guardNames).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(created), "the old NAD is dropped once deleted")
		nad = created
	})
})
