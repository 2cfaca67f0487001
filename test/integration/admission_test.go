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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

func vmimYAML(ns, name, vmi string) string {
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s}\nspec: {vmiName: %s}\n", name, ns, vmi)
}

// holdNetworkStatus makes the API server refuse, with a real ValidatingAdmissionPolicy, the
// network-status annotation Multus writes on virt-handler pods: like a slow CNI, it keeps the
// rolled pods from becoming ready until the returned function lifts it.
func holdNetworkStatus(ctx context.Context) func(context.Context) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-network-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(object.metadata.annotations) || !("k8s.v1.cni.cncf.io/network-status" in object.metadata.annotations) || ` +
					`(has(oldObject.metadata.annotations) && "k8s.v1.cni.cncf.io/network-status" in oldObject.metadata.annotations)`,
				Message: "CNI held back by the test",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-network-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	ExpectWithOffset(1, f.Client.Create(ctx, policy)).To(Succeed())
	ExpectWithOffset(1, f.Client.Create(ctx, binding)).To(Succeed())
	lift := func(ctx context.Context) {
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, policy))).To(Succeed())
	}
	DeferCleanup(lift)
	// The API server enforces a new policy once its informers have it: wait until a probe pod's
	// network-status update is refused (dry run: nothing changes).
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace(ctx), Name: "hold-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	ExpectWithOffset(1, f.Client.Create(ctx, probe)).To(Succeed())
	EventuallyWithOffset(1, func() error {
		p := &corev1.Pod{}
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(probe), p); err != nil {
			return err
		}
		p.Annotations = map[string]string{"k8s.v1.cni.cncf.io/network-status": "[]"}
		return f.Client.Update(ctx, p, client.DryRunAll)
	}).WithContext(ctx).WithTimeout(framework.Short).Should(MatchError(ContainSubstring("CNI held back by the test")))
	return lift
}

var _ = Describe("migration admission", func() {
	// Registered from BeforeEach, this cleanup runs after the test's own (its namespace and
	// migrations are gone by then), unlike an AfterEach.
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })
	It("refuses kubectl create while virt-handlers roll onto a new network, and admits once Ready", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm1", "node-1", nil))).To(Succeed())
		lift := holdNetworkStatus(ctx)
		setValue(ctx, net24)
		Eventually(kubeVirtCondition).WithContext(ctx).WithArguments(kubevirtv1.KubeVirtConditionProgressing).
			WithTimeout(framework.Short).Should(HavePrefix("True/"))

		_, stderr, err := f.Kubectl(vmimYAML(ns, "early", "vm1"), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`migranet kubevirtReady`))
		Expect(stderr).To(ContainSubstring("KubeVirt is not ready"))
		Expect(stderr).To(MatchRegexp(`\d of 3 virt-handlers are on the migration network`))
		Expect(stderr).To(ContainSubstring("runs on node-1, whose virt-handler is not on the migration network"))
		Expect(stderr).To(ContainSubstring("retry when the setting vm-migration-network lists node-1 with an address"))

		lift(ctx)
		waitReady(ctx, netcontroller.ReasonReady)
		Eventually(func() string {
			_, stderr, _ := f.Kubectl(vmimYAML(ns, "later", "vm1"), "create", "-f", "-")
			return stderr
		}).WithTimeout(framework.Short).Should(BeEmpty())
	})

	It("refuses a migration whose only candidate is the source node, saying so", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		Expect(f.Client.Create(ctx, framework.VMI(ns, "pinned", "node-1", map[string]string{"kubernetes.io/hostname": "node-1"}))).To(Succeed())
		_, stderr, err := f.Kubectl(vmimYAML(ns, "nowhere", "pinned"), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("feasibleTarget"))
		Expect(stderr).To(ContainSubstring("node-1"))
		Expect(stderr).To(ContainSubstring("source"))
	})

	It("refuses a migration of a missing VMI, and a second migration of the same VMI", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		_, stderr, err := f.Kubectl(vmimYAML(ns, "ghost", "nope"), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("not found"))
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm2", "node-2", nil))).To(Succeed())
		_, stderr, err = f.Kubectl(vmimYAML(ns, "first", "vm2"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(func() string {
			_, stderr, _ := f.Kubectl(vmimYAML(ns, "second", "vm2"), "create", "-f", "-")
			return stderr
		}).WithTimeout(framework.Short).Should(ContainSubstring("already has a migration in flight"))
	})

	It("keeps the API server's semantics for migrations: 409 on a duplicate name, 404 on a missing one", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm3", "node-1", nil))).To(Succeed())
		_, stderr, err := f.Kubectl(vmimYAML(ns, "dup", "vm3"), "create", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		err = f.Client.Create(ctx, framework.VMIM(ns, "dup", "vm3", nil))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("already exists"))
		_, stderr, err = f.Kubectl("", "get", "vmim", "-n", ns, "missing")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("NotFound"))
	})

	It("refuses cancelling a post-copy migration, then allows it with migranet.io/force-cancel", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		vmi := framework.VMI(ns, "pc", "node-1", nil)
		Expect(f.Client.Create(ctx, vmi)).To(Succeed())
		vmim := framework.VMIM(ns, "pc-move", "pc", nil)
		f.CreateVMIM(ctx, vmim)
		vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
			MigrationUID: vmim.UID, Mode: kubevirtv1.MigrationPostCopy, SourceNode: "node-1", TargetNode: "node-2",
		}
		Expect(f.Client.Update(ctx, vmi)).To(Succeed())
		Eventually(func() string {
			_, stderr, _ := f.Kubectl("", "delete", "vmim", "-n", ns, "pc-move", "--wait=false")
			return stderr
		}).WithTimeout(framework.Short).Should(ContainSubstring("post-copy"))
		_, stderr, err := f.Kubectl("", "annotate", "vmim", "-n", ns, "pc-move", "migranet.io/force-cancel=true")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(func() error {
			_, stderr, err := f.Kubectl("", "delete", "vmim", "-n", ns, "pc-move", "--wait=false")
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		}).WithTimeout(framework.Short).Should(Succeed())
	})

	// Two layers refuse it: the API server's policy first (migranet-migration-network-in-force,
	// which holds while migranet is down), and nad.migranet.io behind it (an install without the
	// policy: OLM without its extras). Each is seen refusing on its own.
	It("refuses deleting the NAD the KubeVirt CR uses: the API server's policy, and the webhook behind it", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		name := expectedNAD(net24)
		_, stderr, err := f.Kubectl("", "delete", "network-attachment-definitions", "-n", cluster.KubeVirtNamespace, name)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("migranet-migration-network-in-force"))
		Expect(stderr).To(And(ContainSubstring(name), ContainSubstring("spec.configuration.migrations.network")))

		bypassPolicy(ctx, "migranet-migration-network-in-force")
		Eventually(func() string {
			_, stderr, _ := f.Kubectl("", "delete", "network-attachment-definitions", "-n", cluster.KubeVirtNamespace, name, "--dry-run=server")
			return stderr
		}).WithTimeout(framework.Short).Should(And(ContainSubstring("nad.migranet.io"), ContainSubstring(name)))
		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: name}, nad)).To(Succeed())
	})

	It("warns, without refusing, when KubeVirt's migrations.network is changed by hand", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		_, stderr, err := f.Kubectl("", "patch", "kubevirt", "-n", cluster.KubeVirtNamespace, cluster.KubeVirtName, "--type", "merge",
			"-p", `{"spec":{"configuration":{"migrations":{"network":"by-hand"}}}}`)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning:"))
		Expect(stderr).To(ContainSubstring(expectedNAD(net24)))
		Eventually(kubeVirtNetwork).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(expectedNAD(net24)))
	})

	It("makes no API request while answering 1,000 admissions, and one read for a VMI its cache lacks", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm4", "node-1", nil))).To(Succeed())
		f.StartVMI(ctx, framework.VMI(ns, "pinned4", "node-1", map[string]string{"kubernetes.io/hostname": "node-1"}))
		// Wait until migranet's controllers are quiet (no request of theirs for 2 s): what is
		// measured is admission, not the tail of the previous test's reconciles.
		before := managerRequests()
		Eventually(func() int {
			n := len(before)
			time.Sleep(2 * time.Second)
			before = managerRequests()
			return len(before) - n
		}).WithTimeout(framework.Long).Should(BeZero())
		start := time.Now()
		denied := 0
		for i := range 1000 {
			vmiName := "vm4"
			if i%2 == 1 {
				vmiName = "pinned4" // half are refused, half admitted: both paths are exercised
			}
			err := f.Client.Create(ctx, framework.VMIM(ns, fmt.Sprintf("dry-%d", i), vmiName, nil), client.DryRunAll)
			if err != nil {
				Expect(err.Error()).To(ContainSubstring("feasibleTarget"))
				denied++
			}
		}
		// Then 50 real (not dry-run) refusals of a VMI that exists: each leaves a Warning event on
		// the VMI through the manager's asynchronous event recorder. Event writes are the one kind
		// of request managerRequests leaves out; waiting for the event makes sure they happened
		// within the window that is checked.
		for i := range 50 {
			err := f.Client.Create(ctx, framework.VMIM(ns, fmt.Sprintf("refused-%d", i), "pinned4", nil))
			Expect(err).To(MatchError(ContainSubstring("feasibleTarget")))
		}
		elapsed := time.Since(start)
		Expect(denied).To(Equal(500))
		Eventually(vmiEvents).WithContext(ctx).WithArguments(ns, "pinned4").WithTimeout(framework.Short).
			Should(ContainElement(HavePrefix(settings.ReasonMigrationRefused + ":")))
		after := managerRequests()
		GinkgoWriter.Printf("1,050 admissions in %s; migranet API requests before %d after %d\n", elapsed, len(before), len(after))
		Expect(after[len(before):]).To(BeEmpty(), "requests migranet made while admitting")

		By("a VMI the cache does not hold costs one read of that VMI, and is then refused")
		for i := range 10 {
			err := f.Client.Create(ctx, framework.VMIM(ns, fmt.Sprintf("ghost-%d", i), "missing", nil), client.DryRunAll)
			Expect(err).To(MatchError(ContainSubstring("vmiState")))
			Expect(err).To(MatchError(ContainSubstring("not found")))
		}
		Eventually(func() []string { return managerRequests()[len(after):] }).WithTimeout(framework.Short).Should(And(
			HaveLen(10), HaveEach(HavePrefix("get /apis/kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/missing"))),
			"requests migranet made for 10 migrations of a missing VMI")
	})
})

// managerRequests lists the non-watch requests migranet made, from the API server's audit log,
// leaving out lease renewals and event writes.
func managerRequests() []string {
	events, err := framework.ReadAudit(f.AuditLog(), env.ManagerUser)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []string
	for _, ev := range events {
		if ev.Verb == "watch" || ev.Stage != "ResponseComplete" || ev.Resource() == "leases" {
			continue
		}
		// Event writes are excluded explicitly: the Warning event a refused migration leaves on
		// its VMI is written by the asynchronous event recorder, after the answer, and admission
		// never waits for it. Every other request (any read above all) still counts.
		if ev.Resource() == "events" && (ev.Verb == "create" || ev.Verb == "patch" || ev.Verb == "update") {
			continue
		}
		// The guard's offender scan runs on the leader on a timer (the suite's
		// --guard-scan-interval 2s), not for admission: its paged pod list and its status write.
		if (ev.Verb == "list" && strings.HasPrefix(ev.RequestURI, "/api/v1/pods?")) ||
			strings.Contains(ev.RequestURI, "fieldManager=migranet-guard") {
			continue
		}
		out = append(out, ev.Verb+" "+ev.RequestURI)
	}
	return out
}
