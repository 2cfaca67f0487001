package kubevirt

import (
	"bytes"
	"context"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// virtAPIUser is who creates the migration of `virtctl migrate`: virt-api's migrate subresource
// creates it with virt-api's own credentials, whoever asked.
const virtAPIUser = "system:serviceaccount:" + cluster.KubeVirtNamespace + ":" + cluster.APIServerServiceAccount

// virtctl runs KubeVirt's own virtctl (release cluster.KubeVirtVersion) against the environment,
// as a user would, and returns its stdout and stderr.
func virtctl(args ...string) (string, string, error) {
	cmd := exec.Command(f.Binaries.Virtctl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	GinkgoWriter.Printf("$ virtctl %s\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

// virtctlMigrate runs `virtctl migrate`, again while migranet refuses it only because its cache
// has not yet seen the VMI the VirtualMachine started moments before.
func virtctlMigrate(args ...string) (string, string, error) {
	var out, stderr string
	var err error
	EventuallyWithOffset(1, func() bool {
		out, stderr, err = virtctl(append([]string{"migrate"}, args...)...)
		return err == nil || !strings.Contains(stderr, "create the VMI first")
	}).WithTimeout(framework.Short).Should(BeTrue())
	return out, stderr, err
}

// startVM creates a VirtualMachine (runStrategy Always) whose VMI is framework.VMI's, with the
// template annotations given, and waits until KubeVirt's VM controller started that VMI and it
// runs.
func startVM(ctx context.Context, ns, name, node string, nodeSelector, annotations map[string]string) *kubevirtv1.VirtualMachineInstance {
	tmpl := framework.VMI(ns, name, node, nodeSelector)
	always := kubevirtv1.RunStrategyAlways
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec:       tmpl.Spec,
			},
		},
	}
	ExpectWithOffset(1, f.Client.Create(ctx, vm)).To(Succeed())
	v := &kubevirtv1.VirtualMachineInstance{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, v)).To(Succeed())
		g.Expect(v.Status.Phase).To(Equal(kubevirtv1.Running), "VMI %s/%s phase", ns, name)
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	return v
}

// migrationOf returns the migration of VMI name (there must be exactly one).
func migrationOf(ctx context.Context, ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.MigrationSelectorLabel: name})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	}).WithTimeout(framework.Short).Should(Succeed())
	return &list.Items[0]
}

var _ = Describe("KubeVirt's own virtctl through virt-api's aggregated API", func() {
	BeforeEach(func() { DeferCleanup(resetSettings) })

	It("serves subresources.kubevirt.io through kube-apiserver, and virtctl migrate starts a migration virt-api creates, to Succeeded", func(ctx context.Context) {
		out, stderr, err := f.Kubectl("", "get", "apiservices", "v1.subresources.kubevirt.io", "v1alpha3.subresources.kubevirt.io",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Available")].status}{"\n"}{end}`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("v1.subresources.kubevirt.io True\nv1alpha3.subresources.kubevirt.io True\n"))
		out, stderr, err = virtctl("version")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(ContainSubstring(`Client Version: version.Info{GitVersion:"` + cluster.KubeVirtVersion + `"`))
		Expect(out).To(ContainSubstring(`Server Version: version.Info{GitVersion:"`+cluster.KubeVirtVersion+`"`), "virt-api answers through the aggregator")

		ns := f.Namespace(ctx)
		before := startVM(ctx, ns, "vm", "node-1", nil, nil)
		out, stderr, err = virtctlMigrate("-n", ns, "vm")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(Equal("VM vm was scheduled to migrate\n"))
		vmim := migrationOf(ctx, ns, "vm")
		Expect(vmim.Name).To(HavePrefix("kubevirt-migrate-vm-"), "named by virt-api")
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, vmim.Name).
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
		Expect(phases(migration(ctx, ns, vmim.Name))).To(Equal(everyPhase))
		after := vmi(ctx, ns, "vm")
		Expect(after.Status.NodeName).NotTo(Equal(before.Status.NodeName), "the VMI moved")
		Expect(after.Status.MigrationState.Completed).To(BeTrue())
	})

	It("refuses virtctl migrate of a VM that cannot move with migranet's reason; exempting virt-api's service account lets every virtctl user past it", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		startVM(ctx, ns, "pinned", "node-1", map[string]string{corev1.LabelHostname: "node-1"}, nil)
		_, stderr, err := virtctlMigrate("-n", ns, "pinned")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("Error migrating VirtualMachine"))
		Expect(stderr).To(ContainSubstring("migranet feasibleTarget"))
		Expect(stderr).To(ContainSubstring("is its source node node-1"))
		list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
		Expect(f.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty())

		By("listing virt-api's service account in exemptUsers: migranet no longer sees who asked")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, `{"exemptUsers":["`+virtAPIUser+`"]}`)
		Eventually(func() error {
			_, _, err := virtctl("migrate", "--dry-run", "-n", ns, "pinned")
			return err
		}).WithTimeout(framework.Short).Should(Succeed(), "admitted: the requester migranet sees is virt-api")
		_, stderr, err = f.Kubectl(vmimYAML(ns, "direct", "pinned"), "create", "--dry-run=server", "-f", "-")
		Expect(err).To(HaveOccurred(), "the same user creating the migration directly is still refused")
		Expect(stderr).To(ContainSubstring("migranet feasibleTarget"))
	})

	It("refuses virtctl migrate-cancel of a migration in post-copy until it is annotated force-cancel, then KubeVirt aborts it", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		// virt-api's migration carries no annotation: the VM's template scripts the stand-in.
		before := startVM(ctx, ns, "vm", "node-2", nil, map[string]string{
			sim.HandlerModeAnnotation: string(kubevirtv1.MigrationPostCopy), sim.HandlerHoldAnnotation: "true",
		})
		_, stderr, err := virtctlMigrate("-n", ns, "vm")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(func(g Gomega) {
			ms := vmi(ctx, ns, "vm").Status.MigrationState
			g.Expect(ms).NotTo(BeNil())
			g.Expect(ms.Mode).To(Equal(kubevirtv1.MigrationPostCopy))
		}).WithTimeout(framework.Long).Should(Succeed())
		vmim := migrationOf(ctx, ns, "vm")

		_, stderr, err = virtctl("migrate-cancel", "-n", ns, "vm")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("Error canceling migration " + vmim.Name))
		Expect(stderr).To(ContainSubstring("migranet postCopyCancel"))

		_, stderr, err = f.Kubectl("", "annotate", "vmim", "-n", ns, vmim.Name, "migranet.io/force-cancel=true")
		Expect(err).NotTo(HaveOccurred(), stderr)
		out, stderr, err := virtctl("migrate-cancel", "-n", ns, "vm")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out + stderr).To(ContainSubstring("VM vm was scheduled to migrate-cancel"))
		Eventually(func() bool {
			err := f.Client.Get(ctx, client.ObjectKeyFromObject(vmim), &kubevirtv1.VirtualMachineInstanceMigration{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}).WithTimeout(framework.Long).Should(BeTrue(), "the migration is finalized and gone")
		after := vmi(ctx, ns, "vm")
		Expect(after.Status.MigrationState.AbortStatus).To(Equal(kubevirtv1.MigrationAbortSucceeded))
		Expect(after.Status.NodeName).To(Equal(before.Status.NodeName), "an aborted migration leaves the VMI on its source")
	})
})
