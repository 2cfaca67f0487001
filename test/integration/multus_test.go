package integration

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// The Multus simulator attaches what the bridge CNI plugin (containernetworking/plugins v1.9.1)
// attaches and refuses what it refuses: these pods stand for any pod asking for a bridge network.
var _ = Describe("the Multus simulator's bridge plugin", func() {
	// attach creates a NAD with the bridge config and a pod on node asking for it, and returns
	// the pod's key.
	attach := func(ctx context.Context, ns, name, node, bridgeConfig string) client.ObjectKey {
		nad := &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge",` + bridgeConfig +
				`,"ipam":{"type":"whereabouts","range":"10.91.0.0/24"}}`},
		}
		Expect(f.Client.Create(ctx, nad)).To(Succeed())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{sim.NetworksAnnotation: name + "@net1"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "none"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		// The namespace's default ServiceAccount may not exist yet.
		Eventually(func() error { return f.Client.Create(ctx, pod.DeepCopy()) }).WithTimeout(framework.Short).Should(Succeed())
		// Graceful deletion runs the DEL that gives the address back.
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, pod))).To(Succeed()) })
		return client.ObjectKeyFromObject(pod)
	}
	ready := func(ctx context.Context, key client.ObjectKey) func(Gomega) {
		return func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(f.Client.Get(ctx, key, p)).To(Succeed())
			g.Expect(p.Annotations).To(HaveKey(sim.NetworkStatusAnnotation))
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
		}
	}

	It("refuses a VLAN outside 0-4094 (loadNetConf): the pod stays not ready with the plugin's error in a FailedCreatePodSandBox event", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		key := attach(ctx, ns, "vlan4095", "node-1", `"bridge":"migration-br","vlan":4095`)
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(f.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var msgs []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == key.Name && e.Reason == "FailedCreatePodSandBox" {
					msgs = append(msgs, e.Message)
				}
			}
			g.Expect(msgs).To(ContainElement(ContainSubstring("invalid VLAN ID 4095 (must be between 0 and 4094)")))
		}).WithTimeout(framework.Long).Should(Succeed())
		p := &corev1.Pod{}
		Expect(f.Client.Get(ctx, key, p)).To(Succeed())
		Expect(p.Annotations).NotTo(HaveKey(sim.NetworkStatusAnnotation), "no interface, no address")
		Expect(p.Status.Conditions).NotTo(ContainElement(And(HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
	})

	It("attaches where the bridge plugin does: an MTU above the node's uplink, and a node that does not carry the cluster network (a bridge without uplink)", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		node := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-2"}, node)).To(Succeed())
		Expect(node.Annotations).To(HaveKeyWithValue(cluster.UplinkMTUAnnotationPrefix+cluster.DefaultClusterNetwork, fmt.Sprint(cluster.DefaultUplinkMTU)))
		Expect(node.Labels).NotTo(HaveKey(sim.ClusterNetworkLabelPrefix + "elsewhere"))
		wide := attach(ctx, ns, "wide", "node-2", `"bridge":"migration-br","vlan":100,"mtu":65000`)
		off := attach(ctx, ns, "off", "node-2", `"bridge":"elsewhere-br","vlan":100`)
		Eventually(ready(ctx, wide)).WithTimeout(framework.Long).Should(Succeed())
		Eventually(ready(ctx, off)).WithTimeout(framework.Long).Should(Succeed())
	})

	// Fault caught: a sandbox left half attached — the first network's address kept (in the
	// IPPool and its reservation) when a later network of the same pod fails, which Multus undoes
	// with a DEL of every delegate it added.
	It("undoes the networks attached before one the plugin refuses, and reports the plugin's error", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		for name, cfg := range map[string]string{
			"first":  `"bridge":"migration-br"`,
			"second": `"bridge":"migration-br","vlan":4095`,
		} {
			Expect(f.Client.Create(ctx, &nadv1.NetworkAttachmentDefinition{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge",` + cfg +
					`,"ipam":{"type":"whereabouts","range":"10.92.0.0/29"}}`},
			})).To(Succeed())
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two", Annotations: map[string]string{sim.NetworksAnnotation: "first@net1,second@net2"}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "none"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		Eventually(func() error { return f.Client.Create(ctx, pod.DeepCopy()) }).WithTimeout(framework.Short).Should(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, pod))).To(Succeed()) })
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(f.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			var msgs []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "two" && e.Reason == "FailedCreatePodSandBox" {
					msgs = append(msgs, e.Message)
				}
			}
			g.Expect(msgs).To(ContainElement(And(ContainSubstring(`"second"`), ContainSubstring("invalid VLAN ID 4095 (must be between 0 and 4094)"))))
		}).WithTimeout(framework.Long).Should(Succeed())
		// The kubelet retries the sandbox every 2 s, each retry adding and undoing the first network
		// again; without the undo its allocation would stay for good (whereabouts hands the same
		// pod and interface the address it holds).
		Eventually(func(g Gomega) {
			allocs, err := poolAllocations(ctx, "10.92.0.0-29")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).NotTo(ContainElement(ns+"/two"), "the first network's allocation is undone")
			reserved, err := reservedAddrs(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			for a, ref := range reserved {
				g.Expect(ref).NotTo(Equal(ns+"/two"), "reservation of %s", a)
			}
		}).WithTimeout(framework.Short).Should(Succeed())
	})
})
