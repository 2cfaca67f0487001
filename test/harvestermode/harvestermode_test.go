package harvestermode

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	"github.com/migranet/migranet/test/sim"
)

// Harvester's values as an admin types them in Harvester's UI: no mtu (Harvester has no such
// field; its network controller adds the uplink's 9000 to the NAD).
const (
	valueA = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
	valueB = `{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24"}`
)

var (
	rangeA = netip.MustParsePrefix("192.168.100.0/24")
	rangeB = netip.MustParsePrefix("10.52.0.0/24")
)

// One story, in order, as an admin lives it on Harvester: migranet installed beside Harvester's
// empty setting, the network set in Harvester's UI, an uplink narrowed by mistake, a virt-handler
// lost, the range changed, the network given up. Each step is also a fault that fails its spec
// without the feature: Harvester mode off (migranet's settings controller then clears the CR
// Harvester wrote: the Configured and audit checks), the mirror not recording Harvester's ranges
// (the old pool stays), the pool check not run on Harvester's NAD (the leaked address stays), the
// guard not told Harvester's NAD (the pod is created).
var _ = Describe("migranet on Harvester's own migration network", Ordered, func() {
	var nadA string

	It("chooses Harvester mode by itself and mirrors Harvester's empty setting: the pod network", func(ctx context.Context) {
		waitMirrored(ctx, "")
		Expect(own(ctx).Status.Source.Setting).To(Equal("settings.harvesterhci.io/vm-migration-network"))
		Expect(condition(ctx, v1beta1.ConditionConfigured)).To(Equal("True/MirroredFromHarvester"))
	})

	It("turns an edit of Harvester's setting into a Ready and Healthy network at the uplink's MTU", func(ctx context.Context) {
		setHarvester(ctx, valueA)
		nadA = waitMirrored(ctx, valueA)
		Expect(nadA).To(HavePrefix("vm-migration-network-"), "Harvester's generated name")
		s := own(ctx)
		Expect(s.Value).To(BeEmpty(), "migranet's own value is never written")
		Expect(s.Status.Source.Value).To(Equal(`{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`))
		Expect(s.Status.AppliedNetwork).To(Equal(nadA))
		Expect(s.Status.Ranges).To(ContainElement(rangeA.String()))
		Expect(s.Status.Summary).To(HavePrefix("Harvester: migration vlan 100"))
		Expect(s.Status.Nodes).To(HaveLen(3), "the witness node runs no virt-handler")
		for _, n := range s.Status.Nodes {
			Expect(n.Reason).To(BeEmpty(), n.Name)
			Expect(rangeA.Contains(netip.MustParseAddr(n.IP))).To(BeTrue(), n.Name)
		}
		Expect(s.Status.Capacity).To(HaveValue(HaveField("Used", BeEquivalentTo("3"))))
		Expect(condition(ctx, v1beta1.ConditionHealthy)).To(HavePrefix("True/"))
		reports := &v1beta1.PathReportList{}
		Expect(f.Client.List(ctx, reports)).To(Succeed())
		Expect(reports.Items).To(HaveLen(3))
		for _, r := range reports.Items {
			Expect(r.Network).To(Equal(cluster.KubeVirtNamespace+"/"+nadA), r.Name)
			Expect(r.MTU).To(BeEquivalentTo(9000), "%s probes at the MTU Harvester's NAD carries", r.Name)
		}
		Expect(strings.Fields(guardNames(ctx))).To(ConsistOf(nadA))
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionExclusive).WithTimeout(framework.Long).
			Should(Equal("True/"+netcontroller.ReasonExclusive), "the offender scan looks at Harvester's NAD")
	})

	It("refuses a value for migranet's own setting, naming Harvester's", func(ctx context.Context) {
		_, stderr, err := f.Kubectl("", "patch", "settings.migranet.io", v1beta1.MigrationNetwork, "--type", "merge", "-p",
			fmt.Sprintf(`{"value":%q}`, valueB))
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(And(ContainSubstring("value: Forbidden: migranet runs in Harvester mode"),
			ContainSubstring("kubectl edit settings.harvesterhci.io vm-migration-network")))
		Expect(own(ctx).Value).To(BeEmpty())
	})

	// docs/harvester.md promises the NAD in force is guarded; nad.migranet.io once saw only NADs
	// labelled as migranet's, and this delete went through.
	It("refuses deleting the NAD Harvester rendered while the KubeVirt CR names it, also while migranet is down", func(ctx context.Context) {
		_, stderr, err := f.Kubectl("", "delete", "network-attachment-definitions", "-n", cluster.KubeVirtNamespace, nadA, "--dry-run=server")
		Expect(err).To(HaveOccurred(), "the NAD in force was deletable")
		// The API server's policy answers before nad.migranet.io is called; both name the NAD and
		// the field that names it.
		Expect(stderr).To(And(ContainSubstring(nadA), ContainSubstring("spec.configuration.migrations.network")))
		deleteAs := func(user string) (string, error) {
			_, stderr, err := f.Kubectl("", "delete", "network-attachment-definitions", "-n", cluster.KubeVirtNamespace, nadA,
				"--dry-run=server", "--as", user)
			return stderr, err
		}
		By("Harvester's own delete, while migranet runs: the policy lets its clean-up pass, nad.migranet.io refuses on the CR read live")
		stderr, err = deleteAs(sim.HarvesterServiceAccount)
		Expect(err).To(HaveOccurred(), "the NAD in force was deletable by Harvester")
		Expect(stderr).To(And(ContainSubstring("nad.migranet.io"), ContainSubstring("spec.configuration.migrations.network")))
		// A service account of another namespace whose name starts like Harvester's: cluster-admin,
		// so only admission can refuse it.
		lookalike := "system:serviceaccount:harvester-system-x:harvester"
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lookalike-harvester"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "harvester-system-x", Name: "harvester"}}}
		Expect(f.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(f.Client.Delete(ctx, binding)).To(Succeed()) })
		f.StopReplicas()
		DeferCleanup(func(ctx context.Context) {
			Expect(f.StartReplicas(ctx)).To(Succeed())
			Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		})
		// Issue 52: the NAD every virt-handler needs is guarded by the API server itself
		// (migranet-migration-network-in-force, the KubeVirt CR its parameter).
		_, stderr, err = f.Kubectl("", "delete", "network-attachment-definitions", "-n", cluster.KubeVirtNamespace, nadA, "--dry-run=server")
		Expect(err).To(HaveOccurred(), "with migranet down the NAD in force was deletable")
		Expect(stderr).To(And(ContainSubstring(nadA), ContainSubstring("spec.configuration.migrations.network")))
		stderr, err = deleteAs(lookalike)
		Expect(err).To(HaveOccurred(), "with migranet down the NAD in force was deletable by %s", lookalike)
		Expect(stderr).To(ContainSubstring("migranet-migration-network-in-force"))
		// Harvester deletes its old NAD right after its KubeVirt CR update and never retries; the
		// policy's parameter may trail that update (seen in CI: a range change stuck at
		// RemoveOldNadError), so the policy does not judge Harvester's clean-up of what it rendered.
		_, err = deleteAs(sim.HarvesterServiceAccount)
		Expect(err).NotTo(HaveOccurred(), "Harvester's clean-up of a NAD it rendered was refused by the policy")
	})

	It("keeps every other pod and VM off Harvester's migration NAD, also while migranet is down", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		pod := func(name string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Annotations: map[string]string{sim.NetworksAnnotation: cluster.KubeVirtNamespace + "/" + nadA}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}
		}
		vm := func(name string) *kubevirtv1.VirtualMachineInstance {
			vmi := framework.VMI(ns, name, "", nil)
			vmi.Spec.Networks = []kubevirtv1.Network{
				{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
				{Name: "fast", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: cluster.KubeVirtNamespace + "/" + nadA}}},
			}
			vmi.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
				{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
				{Name: "fast", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
			}
			return vmi
		}
		refused := func(err error) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(And(ContainSubstring(nadA), ContainSubstring("carries live migrations only")))
		}
		refused(f.Client.Create(ctx, pod("web")))
		refused(f.Client.Create(ctx, vm("vm-on-migration")))
		By("with every migranet replica stopped: the policies run in the API server")
		f.StopReplicas()
		DeferCleanup(func(ctx context.Context) {
			Expect(f.StartReplicas(ctx)).To(Succeed())
			Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		})
		refused(f.Client.Create(ctx, pod("web-2")))
		refused(f.Client.Create(ctx, vm("vm-on-migration-2")))
	})

	It("sees a narrowed uplink, refuses migrations pinned through it, and steers the others around it", func(ctx context.Context) {
		const broken = "node-3"
		ns := f.Namespace(ctx)
		f.StartVMI(ctx, framework.VMI(ns, "vm", "node-1", nil))
		f.SetUplinkMTU(ctx, broken, 1500)
		DeferCleanup(func(ctx context.Context) {
			f.SetUplinkMTU(ctx, broken, cluster.DefaultUplinkMTU)
			Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionHealthy).WithTimeout(framework.Long).Should(HavePrefix("True/"))
		})
		By("the agents report node-3's pairs: Healthy False naming it")
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionHealthy).WithTimeout(framework.Long).
			Should(HavePrefix("False/" + netcontroller.ReasonPathsFailing))
		Expect(conditionMessage(ctx, v1beta1.ConditionHealthy)).To(ContainSubstring(broken))
		By("a migration pinned to node-3, as Harvester's migrate action pins it, refused by every replica")
		f.RefusedByEveryReplica(vmimTo(ns, "pinned", "vm", broken), "9000-byte frames from node-1 to node-3 do not arrive")
		By("unpinned migrations steered off node-3 and completed")
		source := "node-1"
		for i := range 3 {
			name := fmt.Sprintf("steered-%d", i)
			_, stderr, err := f.Kubectl(vmimTo(ns, name, "vm", ""), "create", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(stderr).To(ContainSubstring("node-3 excluded from the targets"))
			var target string
			Eventually(func(g Gomega) {
				m := &kubevirtv1.VirtualMachineInstanceMigration{}
				g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)).To(Succeed())
				g.Expect(m.Status.Phase).To(Equal(kubevirtv1.MigrationSucceeded))
				vmi := &kubevirtv1.VirtualMachineInstance{}
				g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm"}, vmi)).To(Succeed())
				target = vmi.Status.NodeName
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			Expect(target).NotTo(Or(Equal(broken), Equal(source)), "migration %d went from %s to %s", i, source, target)
			source = target
		}
	})

	It("releases the address and reservation of a force-deleted virt-handler", func(ctx context.Context) {
		handlers := virtHandlers(ctx)
		Expect(handlers).To(HaveLen(3))
		victim := handlers[1]
		ip, ok := settings.PodMigrationAddr(&victim)
		Expect(ok).To(BeTrue())
		ref := cluster.KubeVirtNamespace + "/" + victim.Name
		Expect(poolRefs(ctx, rangeA)).To(ContainElement(ref))
		By(fmt.Sprintf("force-deleting %s (%s): no CNI DEL, as a lost node leaves it", victim.Name, ip))
		Expect(f.Client.Delete(ctx, &victim, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(poolRefs(ctx, rangeA)).NotTo(ContainElement(ref), "the pool entry")
			g.Expect(reservedFor(ctx)).NotTo(ContainElement(ref), "the reservation")
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	})

	It("follows a range change: the new NAD mirrored, Harvester's old one gone, its emptied pool deleted", func(ctx context.Context) {
		setHarvester(ctx, valueB)
		nadB := waitMirrored(ctx, valueB)
		Expect(nadB).NotTo(Equal(nadA))
		s := own(ctx)
		Expect(s.Status.Source.Value).To(Equal(`{"clusterNetwork":"migration","vlan":200,"range":"10.52.0.0/24","mtu":9000}`))
		Expect(s.Status.Ranges).To(ContainElements(rangeA.String(), rangeB.String()))
		Eventually(harvesterNADs).WithContext(ctx).WithTimeout(framework.Long).Should(ConsistOf(nadB), "Harvester deletes its old NAD")
		Eventually(guardNames).WithContext(ctx).WithTimeout(framework.Long).Should(Equal(nadB))
		Eventually(poolRefs).WithContext(ctx).WithArguments(rangeA).WithTimeout(framework.Long).Should(BeNil(),
			"the pool of Harvester's earlier range, emptied by the virt-handlers' CNI DELs, is deleted (Harvester #9501)")
		Expect(poolRefs(ctx, rangeB)).To(HaveLen(3))
	})

	It("reports the pod network once Harvester's setting is emptied, and leaves nothing behind", func(ctx context.Context) {
		setHarvester(ctx, "")
		waitMirrored(ctx, "")
		s := own(ctx)
		Expect(s.Status.AppliedNetwork).To(BeEmpty())
		Expect(s.Status.Nodes).To(BeEmpty())
		Eventually(harvesterNADs).WithContext(ctx).WithTimeout(framework.Long).Should(BeEmpty())
		Eventually(guardNames).WithContext(ctx).WithTimeout(framework.Long).Should(BeEmpty())
		Eventually(poolRefs).WithContext(ctx).WithArguments(rangeB).WithTimeout(framework.Long).Should(BeNil())
	})

	It("never wrote the KubeVirt CR or a NAD: Harvester's controller owns both", func(ctx context.Context) {
		Expect(f.WritesBy(env.ManagerUser, "kubevirt.io", "kubevirts")).To(BeEmpty(), "migranet's writes of the KubeVirt CR")
		Expect(f.WritesBy(env.ManagerUser, "k8s.cni.cncf.io", "network-attachment-definitions")).To(BeEmpty(), "migranet's writes of NADs")
		kv, err := f.KubeVirt(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, m := range kv.ManagedFields {
			if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:migrations"`) {
				Expect(m.Manager).NotTo(ContainSubstring("migranet"), "managedFields: %s owns migrations", m.Manager)
			}
		}
	})
})

// conditionMessage is the message of a condition of migranet's setting.
func conditionMessage(ctx context.Context, typ string) string {
	for _, c := range own(ctx).Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}
