package kubevirt

import (
	"context"
	"fmt"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// The virt-handler stand-in fails a migration whose path the migration network cannot carry
// (sim.MigrationPath). These specs put the cluster in each such state, show migranet refusing the
// migration at create, show the stand-in failing it once migranet is told only to warn (so the
// refusal is not a guess), and show a migration admitted and completed once the state is fixed.

// vmimTo renders a migration of vmi to node (spec.addedNodeSelector on the hostname), so the
// scheduler cannot pick another target.
func vmimTo(ns, name, vmi, node string) string {
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {vmiName: %s, addedNodeSelector: {%s: %s}}\n", name, ns, vmi, corev1.LabelHostname, node)
}

// createWarned creates the migration once migranet's cache has the policy that only warns, and
// returns kubectl's stderr (the warnings).
func createWarned(yaml string) string {
	var stderr string
	EventuallyWithOffset(1, func() error {
		var err error
		_, stderr, err = f.Kubectl(yaml, "create", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		return nil
	}).WithTimeout(framework.Short).Should(Succeed())
	return stderr
}

// waitFailed waits until the migration Failed and returns the VMI's migration state.
func waitFailed(ctx context.Context, ns, name, vmiName string) *kubevirtv1.VirtualMachineInstanceMigrationState {
	EventuallyWithOffset(1, func() string {
		phase := migrationPhase(ctx, ns, name)
		if phase == string(kubevirtv1.MigrationSucceeded) {
			StopTrying("the migration Succeeded: the stand-in carried it").Now()
		}
		return phase
	}).WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationFailed)))
	ms := vmi(ctx, ns, vmiName).Status.MigrationState
	ExpectWithOffset(1, ms).NotTo(BeNil())
	ExpectWithOffset(1, ms.Failed).To(BeTrue(), "the source reports the migration failed")
	return ms
}

// patchNode applies change to the node and registers its undo.
func patchNode(ctx context.Context, name string, change, undo func(*corev1.Node)) {
	edit := func(ctx context.Context, fn func(*corev1.Node)) {
		n := &corev1.Node{}
		ExpectWithOffset(2, f.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		fn(n)
		ExpectWithOffset(2, f.Client.Patch(ctx, n, patch)).To(Succeed())
	}
	edit(ctx, change)
	DeferCleanup(func(ctx context.Context) { edit(ctx, undo) })
}

// otherNode is a node that is neither of nodes.
func otherNode(nodes ...string) string {
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		if n != nodes[0] && (len(nodes) < 2 || n != nodes[1]) {
			return n
		}
	}
	return ""
}

// vmOnNetwork configures the migration network value, waits until it and KubeVirt are ready,
// and starts VMI "vm" (on node-1 when it can) in a new namespace; it returns the namespace, the
// VMI's node and another node.
func vmOnNetwork(ctx context.Context, value string) (ns, source, target string) {
	GinkgoHelper()
	f.SetSetting(ctx, v1beta1.MigrationNetwork, value)
	waitNetworkReady(ctx, netcontroller.ReasonReady)
	Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
	ns = f.Namespace(ctx)
	source = f.StartVMI(ctx, framework.VMI(ns, "vm", "node-1", nil)).Status.NodeName
	return ns, source, otherNode(source)
}

// warnOnly makes migranet warn instead of refusing for the rules given.
func warnOnly(rules ...string) {
	value := `{"rules":{`
	for i, r := range rules {
		if i > 0 {
			value += ","
		}
		value += strconv.Quote(r) + `:"warn"`
	}
	f.SetSetting(context.Background(), v1beta1.MigrationPolicy, value+"}}")
}

var _ = Describe("migrations the migration network cannot carry", func() {
	BeforeEach(func() { DeferCleanup(resetSettings) })

	It("refuses a migration out of a node that no longer carries the cluster network, which the stand-in fails; once it carries it again, admits one that completes", func(ctx context.Context) {
		ns, source, target := vmOnNetwork(ctx, net24)
		label := sim.ClusterNetworkLabelPrefix + cluster.DefaultClusterNetwork

		By("Harvester's agent taking the cluster network off the source node (its VlanConfig no longer matches it)")
		patchNode(ctx, source, func(n *corev1.Node) { delete(n.Labels, label) }, func(n *corev1.Node) { n.Labels[label] = "true" })
		// Its virt-handler keeps its migration0 address (the bridge plugin made a bridge without
		// uplink), but the network controller no longer counts the node as attached.
		Eventually(networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Long).Should(Equal("False/" + netcontroller.ReasonNodesNotAttached))
		s := &v1beta1.Setting{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
		Expect(s.Status.Nodes).To(ContainElement(And(HaveField("Name", source), HaveField("Reason", netcontroller.ReasonNoClusterNetwork),
			HaveField("IP", Not(BeEmpty())))))
		Eventually(func() string {
			_, stderr, err := f.Kubectl(vmimTo(ns, "refused", "vm", target), "create", "-f", "-")
			if err == nil {
				StopTrying("migranet admitted the migration (stderr: " + stderr + ")").Now()
			}
			return stderr
		}).WithTimeout(framework.Short).Should(And(ContainSubstring("migranet networkReady"),
			ContainSubstring(fmt.Sprintf("%s, which does not carry the cluster network %s", source, cluster.DefaultClusterNetwork))))

		By("the stand-in failing the same migration once migranet only warns")
		// runningPathHealthy at warn too: the agents fail the source's paths (a bridge without
		// uplink), and at enforce migranet would abort the migration before the stream's dial fails.
		warnOnly("networkReady", "runningPathHealthy")
		stderr := createWarned(vmimTo(ns, "through", "vm", target))
		Expect(stderr).To(ContainSubstring("Warning: migranet networkReady"))
		ms := waitFailed(ctx, ns, "through", "vm")
		// Over real node networks the stream cannot connect from the source's bridge without uplink
		// (nothing answers its ARP): through the patched pair the source proxy then closes the
		// launcher's socket under libvirt (libvirt then sees a broken pipe on its write, or a reset
		// on its read, whichever it was doing: both seen), over plain TCP the dial itself fails;
		// with MIGRANET_TEST_SKIP=netns the simulated verdict names the missing cluster network.
		Expect(ms.FailureReason).To(And(HavePrefix("Live migration failed"), Or(
			MatchRegexp(`(write|read) unix @->\S+/migrationproxy/\S+-source\.sock: (write: broken pipe|read: connection reset by peer)$`),
			And(ContainSubstring("->"+ms.TargetNodeAddress+":"), HaveSuffix("connect: no route to host")),
			ContainSubstring(fmt.Sprintf("the source node %s does not carry cluster network %s", source, cluster.DefaultClusterNetwork)))))
		Expect(vmi(ctx, ns, "vm").Status.NodeName).To(Equal(source), "a failed migration leaves the VMI on its source")

		By("the cluster network back on the source: admitted under enforcement, and completed")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, "")
		n := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: source}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels[label] = "true"
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		stderr = createWarned(vmimTo(ns, "again", "vm", target))
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "again").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
	})

	It("refuses a migration while virt-handlers roll from one VLAN to another, which the stand-in fails across the two VLANs; once rolled, admits one that completes", func(ctx context.Context) {
		ns, source, target := vmOnNetwork(ctx, net24)

		By("holding the virt-handler roll (DaemonSet updateStrategy OnDelete) and moving the network to VLAN 200")
		ds := &appsv1.DaemonSet{}
		dsKey := client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: sim.VirtHandlerName}
		setStrategy := func(ctx context.Context, s appsv1.DaemonSetUpdateStrategy) {
			Expect(f.Client.Get(ctx, dsKey, ds)).To(Succeed())
			patch := client.MergeFrom(ds.DeepCopy())
			ds.Spec.UpdateStrategy = s
			Expect(f.Client.Patch(ctx, ds, patch)).To(Succeed())
		}
		one := intstr.FromInt32(1)
		rolling := appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}
		setStrategy(ctx, appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType})
		DeferCleanup(func(ctx context.Context) { setStrategy(ctx, rolling) })
		vlan200 := `{"clusterNetwork":"migration","vlan":200,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
		f.SetSetting(ctx, v1beta1.MigrationNetwork, vlan200)
		Eventually(networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
			WithTimeout(framework.Long).Should(HavePrefix("True/"))
		kv, err := f.KubeVirt(ctx)
		Expect(err).NotTo(HaveOccurred())
		newNAD := *kv.Spec.Configuration.MigrationConfiguration.Network

		By("rolling only the target node's virt-handler onto VLAN 200")
		old := virtHandlerOn(ctx, target)
		Expect(f.Client.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(f.Client.List(ctx, pods, client.InNamespace(cluster.KubeVirtNamespace),
				client.MatchingLabels{sim.VirtHandlerLabel: sim.VirtHandlerName}, client.MatchingFields{"spec.nodeName": target})).To(Succeed())
			var p *corev1.Pod
			for i := range pods.Items {
				if pods.Items[i].UID != old.UID && pods.Items[i].Status.Phase == corev1.PodRunning {
					p = &pods.Items[i]
				}
			}
			g.Expect(p).NotTo(BeNil(), "a new running virt-handler pod on %s", target)
			g.Expect(p.Annotations[sim.NetworksAnnotation]).To(HavePrefix(newNAD + "@"))
			g.Expect(p.Annotations[sim.NetworkStatusAnnotation]).To(ContainSubstring(sim.MigrationInterface))
		}).WithTimeout(framework.Long).Should(Succeed())
		Expect(virtHandlerOn(ctx, source).Annotations[sim.NetworksAnnotation]).NotTo(HavePrefix(newNAD+"@"), "the source is still on VLAN 100")
		Eventually(networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Long).Should(HavePrefix("False/"))

		_, stderr, err := f.Kubectl(vmimTo(ns, "refused", "vm", target), "create", "-f", "-")
		Expect(err).To(HaveOccurred(), "migranet refuses a migration during the roll")
		Expect(stderr).To(ContainSubstring("migranet networkReady"))
		Expect(stderr).To(ContainSubstring("of 3 virt-handlers are on the migration network " + newNAD))

		By("the stand-in failing it across the two VLANs once migranet only warns")
		warnOnly("kubevirtReady", "networkReady")
		stderr = createWarned(vmimTo(ns, "through", "vm", target))
		Expect(stderr).To(ContainSubstring("Warning: migranet networkReady"))
		ms := waitFailed(ctx, ns, "through", "vm")
		Expect(ms.FailureReason).To(And(HavePrefix("Live migration failed"), ContainSubstring("VLAN 100"), ContainSubstring("VLAN 200")))

		By("letting the roll finish: admitted under enforcement, and completed")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, "")
		setStrategy(ctx, rolling)
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
		stderr = createWarned(vmimTo(ns, "again", "vm", target))
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "again").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
	})

	It("refuses a migration to a node whose uplink is narrower than the network's MTU once the probe agents see it, whose stream stalls and KubeVirt aborts; once repaired, admits one that completes", func(ctx context.Context) {
		overPlainTCP()
		// Harvester sets the uplink's MTU in the node's kernel from its VlanConfig; while one
		// VlanConfig's MTU differs, or on a cluster whose NAD webhook is not Harvester's, no
		// object says a node's uplink is narrower than the NAD: only packets do.
		// Never hides a defect in CI: reachable only when MIGRANET_TEST_SKIP names netns (without
		// it the suite fails at start on a machine that cannot make real node networks), which
		// CI does not set; test/summary counts any skip that variable does not allow as red.
		if f.NodeNetworks == nil {
			Skip("the probe agents need the nodes' real networks (MIGRANET_TEST_SKIP=netns)")
		}
		ns, source, target := vmOnNetwork(ctx, jumbo)
		key := cluster.UplinkMTUAnnotationPrefix + cluster.DefaultClusterNetwork
		patchNode(ctx, target, func(n *corev1.Node) { n.Annotations[key] = "1500" },
			func(n *corev1.Node) { n.Annotations[key] = strconv.Itoa(cluster.DefaultUplinkMTU) })

		By("the agents reporting the pair: Healthy False, and the migration refused naming it")
		Eventually(networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionHealthy).
			WithTimeout(framework.Long).Should(Equal("False/" + netcontroller.ReasonPathsFailing))
		// Healthy turns False with the first report that lists a pair of the target's; the pair
		// with this source may come a round later, and each replica reads the reports from its own
		// cache: a server-side dry run (the webhook's own answer, nothing created) until refused.
		Eventually(func() string {
			_, stderr, err := f.Kubectl(vmimTo(ns, "refused", "vm", target), "create", "--dry-run=server", "-f", "-")
			if err == nil {
				return "admitted: " + stderr
			}
			return stderr
		}).WithTimeout(framework.Long).Should(And(ContainSubstring("migranet pathHealthy"),
			ContainSubstring(fmt.Sprintf("9000-byte frames from %s to %s do not arrive", source, target))))

		By("the stand-in's stream stalling the same migration once migranet only warns, KubeVirt's progress timeout (5 s on the KubeVirt CR) failing it")
		// runningPathHealthy at warn too: at enforce migranet would abort the stalled stream
		// within a round (pathabort_test.go), before KubeVirt's progress timeout.
		setProgressTimeout(ctx, 5)
		warnOnly("pathHealthy", "runningPathHealthy")
		stderr := createWarned(vmimTo(ns, "stalls", "vm", target))
		Expect(stderr).To(ContainSubstring("Warning: migranet pathHealthy"))
		ms := waitFailed(ctx, ns, "stalls", "vm")
		Expect(ms.TargetNodeDomainDetected).To(BeTrue(), "the connection opened: small packets pass")
		expectStalled(ms, 5)

		By("the uplink back at 9000: Healthy again, admitted under enforcement, and completed")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, "")
		n := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: target}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		n.Annotations[key] = strconv.Itoa(cluster.DefaultUplinkMTU)
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		// createWarned retries while the aborted migration's target pod is still being deleted.
		stderr = createWarned(vmimTo(ns, "again", "vm", target))
		Expect(stderr).NotTo(ContainSubstring("Warning"))
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "again").
			WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
	})
})
