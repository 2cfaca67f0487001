package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// everyPhase is the path of a successful migration through KubeVirt's migration controller.
var everyPhase = []kubevirtv1.VirtualMachineInstanceMigrationPhase{
	kubevirtv1.MigrationPending, kubevirtv1.MigrationScheduling, kubevirtv1.MigrationScheduled,
	kubevirtv1.MigrationPreparingTarget, kubevirtv1.MigrationTargetReady, kubevirtv1.MigrationRunning,
	kubevirtv1.MigrationSucceeded,
}

var _ = Describe("KubeVirt's own virt-api and virt-controller beside migranet", func() {
	// Registered from BeforeEach, this cleanup runs after the spec's own (its namespace and
	// migrations are gone by then).
	BeforeEach(func() { DeferCleanup(resetSettings) })

	It("installs KubeVirt's own CRDs and webhooks, and runs a VMI through virt-controller, the scheduler and kwok", func(ctx context.Context) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "virt-api-validator"}, cfg)).To(Succeed())
		found := false
		for _, w := range cfg.Webhooks {
			if w.Name == cluster.KubeVirtMigrationAdmitter {
				found = true
				Expect(w.ClientConfig.URL).NotTo(BeNil())
				Expect(*w.ClientConfig.URL).To(HavePrefix(f.VirtAPIURL()))
			}
		}
		Expect(found).To(BeTrue(), "webhook %s in virt-api-validator", cluster.KubeVirtMigrationAdmitter)
		out, stderr, err := f.Kubectl("", "get", "crd", "-l", "kubevirt.io", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(ContainSubstring("virtualmachineinstancemigrations.kubevirt.io"))
		Expect(out).To(ContainSubstring("virtualmachineclones.clone.kubevirt.io"), "KubeVirt's generator, not controller-gen (which made only three)")

		ns := f.Namespace(ctx)
		vm := f.StartVMI(ctx, framework.VMI(ns, "vm", "node-2", nil))
		Expect(vm.Status.NodeName).To(Equal("node-2"), "the virt-launcher pod follows the VMI's node preference")
		Expect(vm.Status.SelinuxContext).To(Equal("none"), "reported by the virt-handler stand-in")
		pods := &corev1.PodList{}
		Expect(f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		launcher := pods.Items[0]
		Expect(metav1.GetControllerOf(&launcher).UID).To(Equal(vm.UID))
		Expect(launcher.Spec.NodeName).To(Equal("node-2"))
		Expect(launcher.Spec.NodeSelector).To(HaveKeyWithValue("kubevirt.io/schedulable", "true"))
		Expect(launcher.Spec.Containers[0].Image).To(Equal(cluster.LauncherImage))
		Expect(launcher.Status.Phase).To(Equal(corev1.PodRunning))
	})

	It("puts KubeVirt's admitters and migranet's in one chain, each refusal reaching the user in its own words", func(ctx context.Context) {
		ns := f.Namespace(ctx)

		By("migranet refusing a migration whose only candidate is the source node")
		f.StartVMI(ctx, framework.VMI(ns, "pinned", "node-1", map[string]string{corev1.LabelHostname: "node-1"}))
		_, stderr, err := f.Kubectl(vmimYAML(ns, "nowhere", "pinned"), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`The VirtualMachineInstanceMigration "nowhere" is invalid`))
		Expect(stderr).To(ContainSubstring("migranet feasibleTarget"))
		Expect(stderr).To(ContainSubstring("is its source node node-1"))

		By("KubeVirt refusing a migration of a missing VMI while migranet, told to only warn, admits it")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, `{"rules":{"vmiState":"warn"}}`)
		Eventually(func(g Gomega) {
			_, stderr, err := f.Kubectl(vmimYAML(ns, "ghost", "nope"), "create", "-f", "-")
			g.Expect(err).To(HaveOccurred())
			g.Expect(stderr).To(ContainSubstring("Warning: migranet vmiState"), "migranet's warning (the policy reaches migranet's cache)")
			g.Expect(stderr).To(ContainSubstring(fmt.Sprintf(`admission webhook %q denied the request: the VMI "%s/nope" does not exist`,
				cluster.KubeVirtMigrationAdmitter, ns)))
		}).WithTimeout(framework.Short).Should(Succeed())

		By("KubeVirt refusing a VMI that requests no memory")
		_, stderr, err = f.Kubectl(fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: nomem, namespace: %s}\nspec: {domain: {devices: {}}}\n", ns),
			"create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("no memory requested"))
	})

	It("drives an admitted migration through every phase to Succeeded with KubeVirt's migration controller", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		before := f.StartVMI(ctx, framework.VMI(ns, "mover", "node-1", nil))
		began := time.Now()
		_, stderr, err := f.Kubectl(vmimYAML(ns, "move", "mover"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "move").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
		GinkgoWriter.Printf("migration admitted -> Succeeded in %s\n", time.Since(began).Round(time.Millisecond))

		Expect(phases(migration(ctx, ns, "move"))).To(Equal(everyPhase))
		after := vmi(ctx, ns, "mover")
		ms := after.Status.MigrationState
		Expect(ms).NotTo(BeNil())
		Expect(ms.Completed).To(BeTrue())
		Expect(ms.Failed).To(BeFalse())
		Expect(ms.SourceNode).To(Equal(before.Status.NodeName))
		Expect(ms.TargetNode).NotTo(Equal(ms.SourceNode))
		Expect(after.Status.NodeName).To(Equal(ms.TargetNode), "the VMI belongs to the target now")
		Expect(after.Labels).To(HaveKeyWithValue(kubevirtv1.NodeNameLabel, ms.TargetNode))
		Expect(ms.TargetNodeAddress).To(Equal(virtHandlerOn(ctx, ms.TargetNode).Status.PodIP),
			"without a migration network the target listens on its virt-handler's pod IP")
		Expect(ms.TargetDirectMigrationNodePorts).To(HaveLen(3))
		Eventually(func(g Gomega) {
			src := &corev1.Pod{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ms.SourcePod}, src)).To(Succeed())
			g.Expect(src.Status.Phase).To(Equal(corev1.PodSucceeded), "the source virt-launcher ends")
		}).WithTimeout(framework.Short).Should(Succeed())
	})

	It("migrates over the configured migration network: the target listens on its migration0 address inside the range", func(ctx context.Context) {
		f.SetSetting(ctx, v1beta1.MigrationNetwork, net24)
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "netvm", "node-3", nil))
		_, stderr, err := f.Kubectl(vmimYAML(ns, "move", "netvm"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "move").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))

		ms := vmi(ctx, ns, "netvm").Status.MigrationState
		addr, err := netip.ParseAddr(ms.TargetNodeAddress)
		Expect(err).NotTo(HaveOccurred())
		Expect(netip.MustParsePrefix("192.168.100.0/24").Contains(addr)).To(BeTrue(), "%s inside the setting's range", addr)
		s := &v1beta1.Setting{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
		published := map[string]string{}
		for _, n := range s.Status.Nodes {
			published[n.Name] = n.IP
		}
		Expect(ms.TargetNodeAddress).To(Equal(published[ms.TargetNode]), "the address migranet publishes for the target node")
		Expect(ms.TargetNodeAddress).NotTo(Equal(virtHandlerOn(ctx, ms.TargetNode).Status.PodIP))
	})

	It("refuses cancelling a post-copy migration, and once forced KubeVirt aborts it", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		vm := f.StartVMI(ctx, framework.VMI(ns, "vm", "node-1", nil))
		source := vm.Status.NodeName
		_, stderr, err := f.Kubectl(vmimYAML(ns, "pc", "vm",
			sim.HandlerModeAnnotation+": PostCopy", sim.HandlerHoldAnnotation+": \"true\""), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(func(g Gomega) {
			ms := vmi(ctx, ns, "vm").Status.MigrationState
			g.Expect(ms).NotTo(BeNil())
			g.Expect(ms.Mode).To(Equal(kubevirtv1.MigrationPostCopy))
		}).WithTimeout(framework.Long).Should(Succeed())
		// virt-controller moves the migration's phase from the VMI's status on its own time.
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "pc").
			WithTimeout(framework.Short).Should(Equal(string(kubevirtv1.MigrationRunning)))

		_, stderr, err = f.Kubectl("", "delete", "vmim", "-n", ns, "pc", "--wait=false")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("post-copy"))
		_, stderr, err = f.Kubectl("", "annotate", "vmim", "-n", ns, "pc", "migranet.io/force-cancel=true")
		Expect(err).NotTo(HaveOccurred(), stderr)
		_, stderr, err = f.Kubectl("", "delete", "vmim", "-n", ns, "pc", "--wait=false")
		Expect(err).NotTo(HaveOccurred(), stderr)

		// virt-controller asks the source to abort and releases the migration once it failed.
		Eventually(func() bool {
			err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pc"}, &kubevirtv1.VirtualMachineInstanceMigration{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}).WithTimeout(framework.Long).Should(BeTrue(), "the migration is finalized and gone")
		after := vmi(ctx, ns, "vm")
		Expect(after.Status.MigrationState.AbortRequested).To(BeTrue())
		Expect(after.Status.MigrationState.AbortStatus).To(Equal(kubevirtv1.MigrationAbortSucceeded))
		Expect(after.Status.MigrationState.Failed).To(BeTrue())
		Expect(after.Status.NodeName).To(Equal(source), "an aborted migration leaves the VMI on its source")
		Expect(after.Status.Phase).To(Equal(kubevirtv1.Running))
	})

	It("refuses changing the migration network while KubeVirt runs a migration, and accepts it once that Succeeded", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "vm", "node-2", nil))
		_, stderr, err := f.Kubectl(vmimYAML(ns, "held", "vm", sim.HandlerHoldAnnotation+": \"true\""), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "held").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationRunning)))

		apply := func() (string, error) {
			_, stderr, err := f.Kubectl(fmt.Sprintf("apiVersion: migranet.io/v1beta1\nkind: Setting\nmetadata: {name: %s}\nvalue: %q\n",
				v1beta1.MigrationNetwork, net24), "apply", "-f", "-")
			return stderr, err
		}
		stderr, err = apply()
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(ns + "/held"))

		_, stderr, err = f.Kubectl("", "annotate", "vmim", "-n", ns, "held", sim.HandlerHoldAnnotation+"-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "held").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
		Eventually(func() error {
			stderr, err := apply()
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		}).WithTimeout(framework.Short).Should(Succeed())
	})

	It("lets a virt-handler write only VMIs of its own node (KubeVirt's node restriction, node-bound tokens)", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		vm := f.StartVMI(ctx, framework.VMI(ns, "vm", "node-1", nil))
		own := virtHandlerOn(ctx, vm.Status.NodeName)
		otherNode := "node-1"
		if vm.Status.NodeName == otherNode {
			otherNode = "node-2"
		}
		other := virtHandlerOn(ctx, otherNode)
		// replace sends the VMI back, annotated, as an update made with a token bound to pod.
		replace := func(pod *corev1.Pod) (string, error) {
			token, stderr, err := f.Kubectl("", "create", "token", cluster.HandlerServiceAccount, "-n", cluster.KubeVirtNamespace,
				"--bound-object-kind=Pod", "--bound-object-name="+pod.Name)
			Expect(err).NotTo(HaveOccurred(), stderr)
			raw, stderr, err := f.Kubectl("", "get", "vmi", "-n", ns, "vm", "-o", "json")
			Expect(err).NotTo(HaveOccurred(), stderr)
			var obj map[string]any
			Expect(json.Unmarshal([]byte(raw), &obj)).To(Succeed())
			md := obj["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
			}
			ann["probe"] = pod.Spec.NodeName
			md["annotations"] = ann
			body, err := json.Marshal(obj)
			Expect(err).NotTo(HaveOccurred())
			return kubectlWithToken(token, string(body), "replace", "-f", "-")
		}
		out, err := replace(other)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("Node restriction, virt-handler is only allowed to modify VMIs it owns"))
		out, err = replace(own)
		Expect(err).NotTo(HaveOccurred(), out)
	})
})
