package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

var _ = Describe("the local cluster", func() {
	It("has Ready kwok nodes and an Available KubeVirt CR, as kubectl shows them", func() {
		out, stderr, err := f.Kubectl("", "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(ContainSubstring("node-1=True"))
		Expect(out).To(ContainSubstring("node-3=True"))
		// A spec that ran before may have added or removed nodes: the virt-handler DaemonSet then
		// rolls and virt-operator reports DeploymentInProgress until it is ready again.
		Eventually(func(g Gomega) {
			out, stderr, err := f.Kubectl("", "get", "kubevirt", "-n", cluster.KubeVirtNamespace, "kubevirt",
				"-o", "jsonpath={.status.conditions[?(@.type==\"Available\")].reason}")
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(out).To(Equal(sim.ReasonReady))
		}).WithTimeout(framework.Long).Should(Succeed())
	})

	It("rejects objects that violate the CRD schemas, as a real cluster does", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		_, stderr, err := f.Kubectl(fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata: {name: bad, namespace: %s}
spec: {vmiName: 42}
`, ns), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("spec.vmiName"))
		Expect(stderr).To(MatchRegexp(`Invalid value: "integer"`))

		_, stderr, err = f.Kubectl(`
apiVersion: migranet.io/v1beta1
kind: Setting
metadata: {name: vm-migration-network-typo}
value: 5
`, "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("value"))
		Expect(stderr).To(MatchRegexp(`Invalid value: "integer"`))
	})

	It("keeps the API server's own semantics: AlreadyExists on a duplicate name, NotFound on a missing object", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		vmi := framework.VMI(ns, "twice", "node-1", nil)
		Expect(f.Client.Create(ctx, vmi)).To(Succeed())
		_, stderr, err := f.Kubectl(fmt.Sprintf(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"twice","namespace":%q},"spec":{"domain":{"devices":{}}}}`, ns), "create", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("AlreadyExists"))
		_, stderr, err = f.Kubectl("", "get", "vmim", "-n", ns, "missing")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("NotFound"))
	})

	// These specs show the simulators alone: migranet is stopped, or its settings controller would
	// put the CR back in line with the (empty) setting.
	Context("when the KubeVirt CR's migrations.network is set by hand, without migranet", Ordered, func() {
		const nadName = "hand-made-migration"
		framework.WithoutMigranet(&f, nadName)

		// v1.8.4's virt-operator takes its updating branch for a changed deployment config
		// (sim.SyncConditions): Available stays True, with reason UpdateInProgress, until every
		// virt-handler pod runs the new template and is ready.
		It("leaves KubeVirt updating (Available, not AllComponentsReady) while the NAD is missing, as in a real cluster", func(ctx context.Context) {
			f.SetKubeVirtMigrationNetwork(ctx, nadName)
			Eventually(kubeVirtCondition).WithContext(ctx).WithArguments(kubevirtv1.KubeVirtConditionProgressing).
				WithTimeout(framework.Short).Should(Equal("True/" + sim.ReasonUpdating))
			Consistently(kubeVirtCondition).WithContext(ctx).WithArguments(kubevirtv1.KubeVirtConditionAvailable).
				WithTimeout(4 * framework.Short / 10).Should(Equal("True/" + sim.ReasonUpdating))
			Expect(kubeVirtCondition(ctx, kubevirtv1.KubeVirtConditionDegraded)).To(Equal("True/" + sim.ReasonUpdating))
			Eventually(func(g Gomega) {
				events := &corev1.EventList{}
				g.Expect(f.Client.List(ctx, events, client.InNamespace(cluster.KubeVirtNamespace))).To(Succeed())
				found := false
				for _, e := range events.Items {
					found = found || (e.Reason == "FailedCreatePodSandBox" && e.InvolvedObject.Kind == "Pod")
				}
				g.Expect(found).To(BeTrue(), "a FailedCreatePodSandBox event on a virt-handler pod; virt-handlers: %s", describeVirtHandlers(ctx))
			}).WithTimeout(framework.Short).Should(Succeed())
		})

		It("rolls every virt-handler onto the network once the NAD exists, then reports Available", func(ctx context.Context) {
			nad := &nadv1.NetworkAttachmentDefinition{
				ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: nadName},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br",` +
					`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`},
			}
			Expect(f.Client.Create(ctx, nad)).To(Succeed())
			Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())

			pods := virtHandlers(ctx)
			Expect(pods).To(HaveLen(3))
			rangePrefix := netip.MustParsePrefix("192.168.100.0/24")
			seen := map[netip.Addr]string{}
			for _, p := range pods {
				Expect(p.Annotations).To(HaveKeyWithValue(sim.NetworksAnnotation, nadName+"@migration0"), p.Name)
				Expect(podReady(&p)).To(BeTrue(), p.Name)
				ip := migrationIP(&p)
				Expect(rangePrefix.Contains(ip)).To(BeTrue(), "%s: %s in %s", p.Name, ip, rangePrefix)
				Expect(ip).NotTo(Equal(netip.MustParseAddr("192.168.100.1")), "excluded address handed out")
				Expect(ip).NotTo(Equal(rangePrefix.Addr()), "network address handed out")
				Expect(seen).NotTo(HaveKey(ip), "address %s given to %s and %s", ip, seen[ip], p.Name)
				seen[ip] = p.Name
			}
		})
	})
})

// kubeVirtCondition returns "<status>/<reason>" of a KubeVirt CR condition.
func kubeVirtCondition(ctx context.Context, typ kubevirtv1.KubeVirtConditionType) string {
	kv, err := f.KubeVirt(ctx)
	if err != nil {
		return err.Error()
	}
	for _, c := range kv.Status.Conditions {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "absent"
}

// describeVirtHandlers summarises the virt-handler DaemonSet and pods, for failure messages.
func describeVirtHandlers(ctx context.Context) string {
	ds := &appsv1.DaemonSet{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: sim.VirtHandlerName}, ds); err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("DaemonSet generation %d status %+v;", ds.Generation, ds.Status)
	for _, p := range virtHandlers(ctx) {
		out += fmt.Sprintf(" pod %s node=%s phase=%s ready=%v deleting=%v networks=%q;", p.Name, p.Spec.NodeName, p.Status.Phase,
			podReady(&p), p.DeletionTimestamp != nil, p.Annotations[sim.NetworksAnnotation])
	}
	return out
}

func virtHandlers(ctx context.Context) []corev1.Pod {
	pods := &corev1.PodList{}
	ExpectWithOffset(1, f.Client.List(ctx, pods, client.InNamespace(cluster.KubeVirtNamespace),
		client.MatchingLabels{sim.VirtHandlerLabel: sim.VirtHandlerName})).To(Succeed())
	return pods.Items
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// virtHandlerAllocations is what the pool of rng holds for the live virt-handlers (allocation
// key → kubevirt/<pod>); it fails g while one has no address in rng yet (still being attached).
func virtHandlerAllocations(ctx context.Context, g Gomega, rng netip.Prefix) map[string]string {
	want := map[string]string{}
	for _, p := range virtHandlers(ctx) {
		if p.DeletionTimestamp != nil {
			continue
		}
		ip := migrationIP(&p)
		g.Expect(rng.Contains(ip)).To(BeTrue(), "%s has no migration0 address in %s yet", p.Name, rng)
		want[sim.OffsetKey(rng, ip)] = cluster.KubeVirtNamespace + "/" + p.Name
	}
	return want
}

// migrationIP is the migration0 address in the pod's network-status, or the zero Addr (also
// for a pod whose sandbox is not attached yet, which has no network-status).
func migrationIP(p *corev1.Pod) netip.Addr {
	if _, ok := p.Annotations[sim.NetworkStatusAnnotation]; !ok {
		return netip.Addr{}
	}
	statuses, err := nadutils.GetNetworkStatus(p)
	if err != nil {
		raw, _ := json.Marshal(p.Annotations)
		Fail(fmt.Sprintf("%s: network-status: %v (%s)", p.Name, err, raw))
	}
	for _, s := range statuses {
		if s.Interface == sim.MigrationInterface && len(s.IPs) == 1 {
			a, err := netip.ParseAddr(s.IPs[0])
			if err == nil {
				return a
			}
		}
	}
	return netip.Addr{}
}
