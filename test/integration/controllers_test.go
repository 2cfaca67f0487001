package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

const (
	net24 = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}`
	net25 = `{"clusterNetwork":"migration","vlan":100,"range":"10.77.0.0/25"}`
)

func setValue(ctx context.Context, value string) {
	s := &v1beta1.Setting{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
	patch := client.MergeFrom(s.DeepCopy())
	s.Value = value
	ExpectWithOffset(1, f.Client.Patch(ctx, s, patch)).To(Succeed())
}

func setting(ctx context.Context) *v1beta1.Setting {
	s := &v1beta1.Setting{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
	return s
}

// condition returns "<status>/<reason>" of a Setting condition, or "stale" while the condition
// describes an older generation of the setting.
func condition(ctx context.Context, typ string) string {
	return f.SettingCondition(ctx, typ)
}

func managedNADs(ctx context.Context) []string {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	ExpectWithOffset(1, f.Client.List(ctx, nads, client.InNamespace(cluster.KubeVirtNamespace),
		client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy})).To(Succeed())
	var names []string
	for _, n := range nads.Items {
		if n.DeletionTimestamp == nil {
			names = append(names, n.Name)
		}
	}
	return names
}

func kubeVirtNetwork(ctx context.Context) string {
	kv, err := f.KubeVirt(ctx)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return settings.MigrationNetworkOf(kv)
}

// resetToPodNetwork clears the setting and waits until the cluster is back on the pod network
// with no managed NAD left.
func resetToPodNetwork(ctx context.Context) {
	Expect(resetSetting(ctx)).To(Succeed())
	waitReady(ctx, netcontroller.ReasonPodNetwork)
	Eventually(managedNADs).WithContext(ctx).WithTimeout(framework.Long).Should(BeEmpty())
}

// waitReady waits for Configured and Ready on the setting and an Available KubeVirt CR.
func waitReady(ctx context.Context, readyReason string) {
	EventuallyWithOffset(1, condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
		WithTimeout(framework.Long).Should(HavePrefix("True/"))
	EventuallyWithOffset(1, condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
		WithTimeout(framework.Long).Should(Equal("True/"+readyReason), func() string {
		return fmt.Sprintf("nodes %+v; virt-handlers: %s", setting(ctx).Status.Nodes, describeVirtHandlers(ctx))
	})
	// With the pod network, Ready does not wait for a virt-handler rollout (the one taking
	// migration0 away), but migranet's kubevirtReady rule does.
	ExpectWithOffset(1, f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
	if readyReason == netcontroller.ReasonReady {
		f.WaitPathsProven(ctx)
	}
}

var _ = Describe("the settings and network controllers", func() {
	// Registered from BeforeEach, this cleanup runs after the test's own (its namespace and
	// migrations are gone by then), unlike an AfterEach.
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })
	It("enables the network: NAD, KubeVirt CR, rolled virt-handlers, Ready with per-node addresses and capacity", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		nadName := expectedNAD(net24)
		Expect(managedNADs(ctx)).To(Equal([]string{nadName}))
		Expect(kubeVirtNetwork(ctx)).To(Equal(nadName))

		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: nadName}, nad)).To(Succeed())
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,` +
			`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`))
		Expect(nad.Annotations).To(HaveKeyWithValue(settings.AnnotationSystemNetwork, "true"))

		s := setting(ctx)
		Expect(s.Status.AppliedNetwork).To(Equal(nadName))
		Expect(s.Status.Nodes).To(HaveLen(3))
		rng := netip.MustParsePrefix("192.168.100.0/24")
		for _, n := range s.Status.Nodes {
			Expect(n.Reason).To(BeEmpty(), n.Name)
			Expect(rng.Contains(netip.MustParseAddr(n.IP))).To(BeTrue(), n.IP)
		}
		Expect(s.Status.Capacity).To(Equal(&v1beta1.IPCapacity{Usable: "253", Used: "3", Free: "250", Summary: "3/253"}))
		Expect(condition(ctx, v1beta1.ConditionIPCapacity)).To(Equal("True/" + netcontroller.ReasonSufficient))
		for _, p := range virtHandlers(ctx) {
			Expect(p.Annotations).To(HaveKeyWithValue("k8s.v1.cni.cncf.io/networks", nadName+"@migration0"))
		}
	})

	It("moves to a new NAD when the range changes and deletes the old one after the CR moved", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		setValue(ctx, net25)
		Eventually(kubeVirtNetwork).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(expectedNAD(net25)))
		Eventually(managedNADs).WithContext(ctx).WithTimeout(framework.Short).Should(Equal([]string{expectedNAD(net25)}))
		waitReady(ctx, netcontroller.ReasonReady)
		for _, n := range setting(ctx).Status.Nodes {
			Expect(netip.MustParsePrefix("10.77.0.0/25").Contains(netip.MustParseAddr(n.IP))).To(BeTrue(), n.IP)
		}
	})

	It("changes nothing at all on a whitespace or key-order edit", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		kv, err := f.KubeVirt(ctx)
		Expect(err).NotTo(HaveOccurred())
		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: expectedNAD(net24)}, nad)).To(Succeed())
		handlers := virtHandlers(ctx)
		setValue(ctx, ` { "exclude" : [ "192.168.100.1" ], "range":"192.168.100.0/24",
			"vlan": 100, "clusterNetwork": "migration" } `)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
			WithTimeout(framework.Short).Should(Equal("True/" + settingscontroller.ReasonApplied))
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Short).Should(Equal("True/" + netcontroller.ReasonReady))
		Consistently(func(g Gomega) {
			now, err := f.KubeVirt(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now.Generation).To(Equal(kv.Generation), "KubeVirt spec changed")
			same := &nadv1.NetworkAttachmentDefinition{}
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(nad), same)).To(Succeed())
			g.Expect(same.UID).To(Equal(nad.UID))
			g.Expect(same.ResourceVersion).To(Equal(nad.ResourceVersion))
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
			var uids []string
			for _, p := range virtHandlers(ctx) {
				uids = append(uids, string(p.UID))
			}
			var before []string
			for _, p := range handlers {
				before = append(before, string(p.UID))
			}
			g.Expect(uids).To(ConsistOf(before), "virt-handler pods were replaced")
		}).WithTimeout(3 * framework.Short / 10).Should(Succeed())
	})

	It("rolls back to the pod network on an empty value: CR field removed, NADs deleted", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		setValue(ctx, "")
		waitReady(ctx, netcontroller.ReasonPodNetwork)
		Expect(kubeVirtNetwork(ctx)).To(BeEmpty())
		kv, err := f.KubeVirt(ctx)
		Expect(err).NotTo(HaveOccurred())
		if mc := kv.Spec.Configuration.MigrationConfiguration; mc != nil {
			Expect(mc.Network).To(BeNil())
		}
		Eventually(managedNADs).WithContext(ctx).WithTimeout(framework.Short).Should(BeEmpty())
		Expect(setting(ctx).Status.Nodes).To(BeEmpty())
	})

	It("puts the KubeVirt CR back when its migrations.network is changed by hand", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		f.SetKubeVirtMigrationNetwork(ctx, "someone-elses-network")
		Eventually(kubeVirtNetwork).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(expectedNAD(net24)))
		waitReady(ctx, netcontroller.ReasonReady)
	})

	It("puts back the NAD's config when it is edited by hand", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		key := client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: expectedNAD(net24)}
		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, key, nad)).To(Succeed())
		want := nad.Spec.Config
		nad.Spec.Config = strings.Replace(want, `"promiscMode":true`, `"promiscMode":false`, 1)
		Expect(nad.Spec.Config).NotTo(Equal(want))
		Expect(f.Client.Update(ctx, nad)).To(Succeed())
		Eventually(func(g Gomega) string {
			again := &nadv1.NetworkAttachmentDefinition{}
			g.Expect(f.Client.Get(ctx, key, again)).To(Succeed())
			return again.Spec.Config
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(want))
	})

	It("recreates the NAD when it is deleted behind the webhook's back", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		// The NAD webhook and the API server's policy on the NAD in force refuse this delete (see
		// the admission and guard specs); take both out of the chain, as an admin bypassing them
		// would, until a dry-run delete passes.
		nad := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: expectedNAD(net24)}, nad)).To(Succeed())
		bypassPolicy(ctx, "migranet-migration-network-in-force")
		bypassWebhook(ctx, "nad.migranet.io", func() error { return f.Client.Delete(ctx, nad.DeepCopy(), client.DryRunAll) })
		Expect(f.Client.Delete(ctx, nad)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &nadv1.NetworkAttachmentDefinition{}
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(nad), again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(nad.UID))
		}).WithTimeout(framework.Short).Should(Succeed())
	})

	It("reports Configured=False while KubeVirt refuses the update, retries, and converges once it is allowed", func(ctx context.Context) {
		// A real ValidatingAdmissionPolicy makes the API server refuse every KubeVirt update.
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "freeze-kubevirt"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"*"}, Resources: []string{"kubevirts"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "KubeVirt is frozen for this test"}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "freeze-kubevirt"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "freeze-kubevirt",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}
		Expect(f.Client.Create(ctx, policy)).To(Succeed())
		Expect(f.Client.Create(ctx, binding)).To(Succeed())
		unfreeze := func(ctx context.Context) {
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, binding))).To(Succeed())
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, policy))).To(Succeed())
		}
		DeferCleanup(unfreeze)
		Eventually(func() error { // the policy takes a moment to be enforced
			kv, err := f.KubeVirt(ctx)
			if err != nil {
				return err
			}
			kv.Labels = map[string]string{"probe": fmt.Sprint(GinkgoRandomSeed())}
			// Only the policy's own refusal counts: a conflict with virt-operator's status writes
			// would also fail this update.
			if err := f.Client.Update(ctx, kv); err == nil || !strings.Contains(err.Error(), "KubeVirt is frozen for this test") {
				return fmt.Errorf("KubeVirt update not refused by the policy yet: %v", err)
			}
			return nil
		}).WithTimeout(framework.Short).Should(Succeed())

		setValue(ctx, net24)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
			WithTimeout(framework.Short).Should(Equal("False/" + settingscontroller.ReasonKubeVirtFailed))
		Expect(setting(ctx).Status.AppliedHash).To(BeEmpty(), "the hash is recorded only after every step succeeded")
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Short).Should(Equal("False/" + netcontroller.ReasonNotApplied))

		unfreeze(ctx)
		waitReady(ctx, netcontroller.ReasonReady)
		Expect(kubeVirtNetwork(ctx)).To(Equal(expectedNAD(net24)))
	})

	It("warns when a node added beyond the range's capacity leaves too few free addresses", func(ctx context.Context) {
		small := `{"clusterNetwork":"migration","range":"10.88.0.0/29","exclude":["10.88.0.1"]}` // 5 usable
		freshEventBudget(ctx)
		setValue(ctx, small)
		waitReady(ctx, netcontroller.ReasonReady)
		Expect(condition(ctx, v1beta1.ConditionIPCapacity)).To(Equal("True/" + netcontroller.ReasonSufficient))
		Expect(cluster.CreateNodes(ctx, f.Client, []cluster.NodeSpec{{Name: "extra-1", ClusterNetworks: []string{"migration"}}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) { f.DeleteNodes(ctx, "extra-1") })
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionIPCapacity).
			WithTimeout(framework.Long).Should(Equal("False/" + netcontroller.ReasonLowCapacity))
		Expect(setting(ctx).Status.Capacity).To(Equal(&v1beta1.IPCapacity{Usable: "5", Used: "4", Free: "1", Summary: "4/5"}))
		Eventually(func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(f.Client.List(ctx, events)).To(Succeed())
			found := false
			for _, e := range events.Items {
				found = found || (e.Reason == netcontroller.ReasonLowCapacity && e.Type == corev1.EventTypeWarning &&
					e.InvolvedObject.Name == v1beta1.MigrationNetwork && strings.Contains(e.Message, "10.88.0.0/29"))
			}
			g.Expect(found).To(BeTrue(), "a LowCapacity warning event on the setting")
		}).WithTimeout(framework.Short).Should(Succeed())
	})
})

// freshEventBudget restarts the manager cleanly. Its event recorder, like every client-go
// recorder, drops events on an object beyond a burst of 25 per source (then one per 5 minutes);
// the suite changes the one setting far more often than production does, so a spec that expects
// a setting event starts from a fresh process.
func freshEventBudget(ctx context.Context) {
	f.StopReplicas()
	ExpectWithOffset(1, f.StartReplicas(ctx)).To(Succeed())
}

var _ = Describe("whereabouts IP pool cleanup", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Faults caught: a pool of an earlier range left behind by gone virt-handlers stays forever;
	// a pool another namespace's pod holds an address in is deleted; the pool of the range in use
	// is deleted (its live allocations with it) instead of having only its leaked ones released.
	It("deletes the pools virt-handlers of earlier ranges left behind, and only those", func(ctx context.Context) {
		// Hand-made allocations stand for what force-deleted virt-handlers of earlier ranges and
		// another namespace's pods left; the Multus simulator writes the current range's pool for
		// real. pool writes allocations at the first free offsets from 2 into a pool, creating it
		// if needed: the current range's pool may exist from earlier specs, in any order, with
		// allocations of their own still in it.
		pool := func(name, rng string, refs ...string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(sim.IPPoolGVK)
			err := f.Client.Get(ctx, client.ObjectKey{Namespace: sim.WhereaboutsNamespace, Name: name}, u)
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			exists := err == nil
			if !exists {
				u.SetNamespace(sim.WhereaboutsNamespace)
				u.SetName(name)
				Expect(unstructured.SetNestedField(u.Object, rng, "spec", "range")).To(Succeed())
			}
			allocs, _, _ := unstructured.NestedMap(u.Object, "spec", "allocations")
			if allocs == nil {
				allocs = map[string]any{}
			}
			offset := 2
			for i, ref := range refs {
				for allocs[fmt.Sprint(offset)] != nil {
					offset++ // an earlier spec (any order) may have left allocations here
				}
				allocs[fmt.Sprint(offset)] = map[string]any{"id": fmt.Sprintf("c%d", i), "podref": ref, "ifname": "migration0"}
			}
			Expect(unstructured.SetNestedMap(u.Object, allocs, "spec", "allocations")).To(Succeed())
			if exists {
				Expect(f.Client.Update(ctx, u)).To(Succeed())
			} else {
				Expect(f.Client.Create(ctx, u)).To(Succeed())
			}
			return u
		}
		old := pool("10.76.0.0-25", "10.76.0.0/25", "kubevirt/virt-handler-gone1", "kubevirt/virt-handler-gone2")
		foreign := pool("10.79.0.0-24", "10.79.0.0/24", "tenant/web-0")
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, foreign))).To(Succeed()) })
		// The current range's pool already holds a leaked allocation when the network
		// comes back to it: migranet releases it at its first look at the pool. It also holds
		// another namespace's pod's address (kept), which keeps the pool itself from looking stale
		// to a cleanup pass of the pod network still running from the spec before.
		cur := pool("192.168.100.0-24", "192.168.100.0/24", "kubevirt/virt-handler-gone1", "tenant/web-1")
		curAllocs, _, _ := unstructured.NestedMap(cur.Object, "spec", "allocations")
		tenantKey := ""
		for k, a := range curAllocs {
			if m, _ := a.(map[string]any); m["podref"] == "tenant/web-1" {
				tenantKey = k
			}
		}
		Expect(tenantKey).NotTo(BeEmpty())
		// Later specs count the range's addresses: the tenant's goes with this spec.
		DeferCleanup(func(ctx context.Context) {
			Eventually(func() error {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(sim.IPPoolGVK)
				if err := f.Client.Get(ctx, client.ObjectKeyFromObject(cur), u); err != nil {
					return client.IgnoreNotFound(err)
				}
				unstructured.RemoveNestedField(u.Object, "spec", "allocations", tenantKey)
				return f.Client.Update(ctx, u)
			}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		})

		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		// The network controller's clean-up pass that finds the old range's pool may come a few
		// seconds after Ready (seen in CI: 10.1 s after the wait began, at a Short bound of 10 s).
		Eventually(func() bool {
			return apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy()))
		}).WithTimeout(framework.Long).Should(BeTrue(), "the pool of the old range")
		Eventually(func(g Gomega) {
			want := virtHandlerAllocations(ctx, g, netip.MustParsePrefix("192.168.100.0/24"))
			g.Expect(want).To(HaveLen(3))
			want[tenantKey] = "tenant/web-1"
			allocs, err := poolAllocations(ctx, "192.168.100.0-24")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podRefs(allocs)).To(Equal(want), "the current pool: leaked allocation released, live ones and the tenant's kept")
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign.DeepCopy())).To(Succeed())
			allocs, err := poolAllocations(ctx, "192.168.100.0-24")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(allocs).To(HaveLen(4))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})
