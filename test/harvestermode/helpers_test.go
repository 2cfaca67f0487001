package harvestermode

import (
	"context"
	"crypto/sha1" //nolint:gosec // Harvester's hash of the value, compared only
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// own is migranet's vm-migration-network setting.
func own(ctx context.Context) *v1beta1.Setting {
	GinkgoHelper()
	s := &v1beta1.Setting{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
	return s
}

// condition is "<status>/<reason>" of a condition of migranet's setting.
func condition(ctx context.Context, typ string) string { return f.SettingCondition(ctx, typ) }

// harvesterNADs are the NADs Harvester's controller rendered, in KubeVirt's namespace.
func harvesterNADs(ctx context.Context) []string {
	GinkgoHelper()
	list := &nadv1.NetworkAttachmentDefinitionList{}
	Expect(f.Client.List(ctx, list, client.InNamespace(cluster.KubeVirtNamespace))).To(Succeed())
	var names []string
	for i := range list.Items {
		if settings.HarvesterMigrationNAD(&list.Items[i]) {
			names = append(names, list.Items[i].Name)
		}
	}
	return names
}

// kubeVirtNetwork is the KubeVirt CR's migrations.network.
func kubeVirtNetwork(ctx context.Context) string {
	GinkgoHelper()
	kv, err := f.KubeVirt(ctx)
	Expect(err).NotTo(HaveOccurred())
	return settings.MigrationNetworkOf(kv)
}

// setHarvester sets Harvester's value, as an admin edits it in Harvester's UI. Harvester's
// controller records the value's hash whether or not it applied it, and never tries it again:
// when it failed to write the KubeVirt CR (a conflict with virt-operator's status updates, seen in
// CI), the admin does what migranet's Configured says, once.
func setHarvester(ctx context.Context, value string) {
	GinkgoHelper()
	Expect(sim.SetHarvesterValue(ctx, f.Client, value)).To(Succeed())
	sum := sha1.Sum([]byte(value)) //nolint:gosec // Harvester's hash
	hash := hex.EncodeToString(sum[:])
	var failure string
	Eventually(func(g Gomega) {
		s := &unstructured.Unstructured{}
		s.SetGroupVersionKind(sim.HarvesterSettingGVK)
		g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
		g.Expect(s.GetAnnotations()).To(HaveKeyWithValue(settings.LabelHarvesterMigrationHash, hash), "Harvester has not tried the value yet")
		failure = harvesterFailure(s)
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	if !strings.Contains(failure, "UpdateKubeVirtError") || !strings.Contains(failure, "the object has been modified") {
		return // applied, or a failure the spec is to see
	}
	By("Harvester failed to apply the value (" + failure + ") and will not try it again: the admin follows migranet's Configured")
	remedy := "kubectl annotate settings.harvesterhci.io/vm-migration-network " + settings.LabelHarvesterMigrationHash + "-"
	Eventually(func(g Gomega) {
		g.Expect(own(ctx).Status.Conditions).To(ContainElement(And(HaveField("Type", v1beta1.ConditionConfigured),
			HaveField("Message", ContainSubstring(remedy)))))
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	_, stderr, err := f.Kubectl("", strings.Fields(remedy)[1:]...)
	Expect(err).NotTo(HaveOccurred(), stderr)
}

// harvesterFailure is "<reason>: <message>" of Harvester's setting's configured condition when it
// is False, "" otherwise.
func harvesterFailure(s *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == sim.HarvesterConfigured && m["status"] == "False" {
			return fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return ""
}

// waitMirrored waits until Harvester's controller put value in force and migranet mirrors it
// Ready, and returns the NAD in force ("" for the pod network).
func waitMirrored(ctx context.Context, value string) string {
	GinkgoHelper()
	var nad string
	sum := sha1.Sum([]byte(value))
	hash := hex.EncodeToString(sum[:])
	Eventually(func(g Gomega) {
		nad = kubeVirtNetwork(ctx)
		g.Expect(nad == "").To(Equal(value == ""), "the KubeVirt CR's network: %q", nad)
		if nad != "" {
			// The NAD Harvester rendered from this value, found by its hash label as Harvester does.
			n := &nadv1.NetworkAttachmentDefinition{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: nad}, n)).To(Succeed())
			g.Expect(n.Labels).To(HaveKeyWithValue(settings.LabelHarvesterMigrationHash, hash), "the CR has not moved to the value's NAD yet")
		}
		s := own(ctx)
		g.Expect(s.Status.Source).NotTo(BeNil())
		g.Expect(s.Status.Source.Kind).To(Equal(v1beta1.SourceHarvester))
		if nad != "" {
			g.Expect(s.Status.Source.NetworkAttachmentDefinition).To(Equal(cluster.KubeVirtNamespace + "/" + nad))
		} else {
			g.Expect(s.Status.Source.Value).To(BeEmpty())
		}
		g.Expect(condition(ctx, v1beta1.ConditionConfigured)).To(Equal("True/MirroredFromHarvester"))
	}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	reason := netcontroller.ReasonPodNetwork
	if value != "" {
		reason = netcontroller.ReasonReady
	}
	Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).WithTimeout(framework.Long).
		Should(Equal("True/"+reason), func() string { return fmt.Sprintf("nodes %+v", own(ctx).Status.Nodes) })
	Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
	if value != "" {
		f.WaitPathsProven(ctx)
	}
	return nad
}

// virtHandlers are the virt-handler pods.
func virtHandlers(ctx context.Context) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(f.Client.List(ctx, pods, client.InNamespace(cluster.KubeVirtNamespace),
		client.MatchingLabels{sim.VirtHandlerLabel: sim.VirtHandlerName})).To(Succeed())
	return pods.Items
}

// poolRefs are the pods the whereabouts IPPool of rng holds addresses for (nil: no pool).
func poolRefs(ctx context.Context, rng netip.Prefix) []string {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sim.IPPoolGVK)
	err := f.Client.Get(ctx, client.ObjectKey{Namespace: sim.WhereaboutsNamespace, Name: netcontroller.PoolName(rng)}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	allocs, _, _ := unstructured.NestedMap(u.Object, "spec", "allocations")
	refs := []string{}
	for _, a := range allocs {
		m, _ := a.(map[string]any)
		refs = append(refs, fmt.Sprint(m["podref"]))
	}
	return refs
}

// reservedFor are the pods whereabouts' OverlappingRangeIPReservations name.
func reservedFor(ctx context.Context) []string {
	GinkgoHelper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(netcontroller.ReservationList)
	Expect(f.Client.List(ctx, list, client.InNamespace(sim.WhereaboutsNamespace))).To(Succeed())
	var refs []string
	for _, item := range list.Items {
		ref, _, _ := unstructured.NestedString(item.Object, "spec", "podref")
		refs = append(refs, ref)
	}
	return refs
}

// guardNames is the guard policies' parameter: the NAD names they protect.
func guardNames(ctx context.Context) string {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet-migration-networks"}, cm)).To(Succeed())
	return cm.Data["names"]
}

// vmimTo renders a migration of vmi pinned to node as Harvester's migrate action pins it
// (spec.addedNodeSelector on the hostname); node "" leaves the target to the scheduler.
func vmimTo(ns, name, vmi, node string) string {
	pin := ""
	if node != "" {
		pin = fmt.Sprintf(", addedNodeSelector: {%s: %s}", corev1.LabelHostname, node)
	}
	return fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {vmiName: %s%s}\n", name, ns, vmi, pin)
}
