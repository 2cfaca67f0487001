package integration

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// bypassWebhook takes the webhook named name out of migranet's configuration, as an admin
// bypassing it would, until the spec ends; ready reports whether the API server has stopped
// calling it (it reloads webhook configurations asynchronously).
func bypassWebhook(ctx context.Context, name string, ready func() error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg)).To(Succeed())
	saved := cfg.DeepCopy()
	var kept []admissionregistrationv1.ValidatingWebhook
	for _, w := range cfg.Webhooks {
		if w.Name != name {
			kept = append(kept, w)
		}
	}
	ExpectWithOffset(1, kept).To(HaveLen(len(cfg.Webhooks)-1), "webhook %s", name)
	cfg.Webhooks = kept
	ExpectWithOffset(1, f.Client.Update(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		now := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, now)).To(Succeed())
		now.Webhooks = saved.Webhooks
		Expect(f.Client.Update(ctx, now)).To(Succeed())
		// The hand edit took the webhook's fields from the manifests' field manager; like an
		// admin after such an edit, hand them back, or the next plain re-apply conflicts.
		Expect(f.Reinstall(ctx, "--force-conflicts")).To(Succeed())
	})
	EventuallyWithOffset(1, ready).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
}

// bypassPolicy deletes the ValidatingAdmissionPolicyBinding named binding, as an admin getting past
// the API server's own guard would, and puts it back when the spec ends.
func bypassPolicy(ctx context.Context, binding string) {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: binding}, b)).To(Succeed())
	saved := b.DeepCopy()
	ExpectWithOffset(1, f.Client.Delete(ctx, b)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		saved.ResourceVersion, saved.UID = "", ""
		Expect(client.IgnoreAlreadyExists(f.Client.Create(ctx, saved))).To(Succeed())
	})
}

// configuredMessage is the Configured condition's message.
func configuredMessage(ctx context.Context) string {
	c := meta.FindStatusCondition(setting(ctx).Status.Conditions, v1beta1.ConditionConfigured)
	if c == nil {
		return ""
	}
	return c.Message
}

// A value can be stored without the setting webhook judging it (migranet installed after it, the
// webhook taken out of the chain). The settings controller judges it as the webhook would, against
// the same nodes, before rendering anything.
// Faults caught: a NAD rendered or the KubeVirt CR pointed at a value admission refuses (the
// controller's validation call removed); the applied network torn down when a node joins without
// the cluster network; a value refused for the nodes never applied once they are fixed (nodes not
// watched); no Warning event.
var _ = Describe("a vm-migration-network value stored behind the webhook's back", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	It("is reported, not applied, keeps the network applied before, and is applied once the nodes make it valid", func(ctx context.Context) {
		freshEventBudget(ctx)
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		applied := setting(ctx).Status.AppliedHash
		Expect(applied).NotTo(BeEmpty())

		By("a node joins without the cluster network: the applied network stays")
		Expect(cluster.CreateNodes(ctx, f.Client, []cluster.NodeSpec{{Name: "late-1"}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) { f.DeleteNodes(ctx, "late-1") })
		Consistently(func(g Gomega) {
			g.Expect(condition(ctx, v1beta1.ConditionConfigured)).To(Equal("True/" + settingscontroller.ReasonApplied))
			g.Expect(kubeVirtNetwork(ctx)).To(Equal(expectedNAD(net24)))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("taking the setting webhook out of the chain")
		badVLAN := `{"clusterNetwork":"migration","vlan":4095,"range":"10.77.0.0/25"}`
		bypassWebhook(ctx, "settings.migranet.io", func() error {
			s := setting(ctx)
			s.Value = badVLAN
			return f.Client.Update(ctx, s, client.DryRunAll)
		})
		start := time.Now()

		By("a value wrong in itself")
		setValue(ctx, badVLAN)
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
			WithTimeout(framework.Short).Should(Equal("False/" + settingscontroller.ReasonInvalidValue))
		// Every problem is named: the VLAN, and (the value is not applied yet) the node without the
		// cluster network.
		Expect(configuredMessage(ctx)).To(And(ContainSubstring("value.vlan"), ContainSubstring("4094"),
			ContainSubstring("late-1"), ContainSubstring(expectedNAD(net24)+" stays in force")))

		By("a value fine in itself whose cluster network the new node lacks")
		setValue(ctx, net25)
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, v1beta1.ConditionConfigured)).To(Equal("False/" + settingscontroller.ReasonInvalidValue))
			g.Expect(configuredMessage(ctx)).To(And(ContainSubstring("value.clusterNetwork"), ContainSubstring("late-1"),
				ContainSubstring(settings.ClusterNetworkLabelPrefix+"migration=true"), Not(ContainSubstring("value.vlan"))))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(kubeVirtNetwork(ctx)).To(Equal(expectedNAD(net24)), "the KubeVirt CR keeps the network applied before")
			g.Expect(managedNADs(ctx)).To(Equal([]string{expectedNAD(net24)}), "no NAD rendered from a refused value")
			g.Expect(setting(ctx).Status.AppliedHash).To(Equal(applied))
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Short).Should(
			ContainElement(HavePrefix(corev1.EventTypeWarning + " " + settingscontroller.ReasonInvalidValue + ": ")))
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Short).Should(Equal("False/" + netcontroller.ReasonNotApplied))

		By("the node gets the cluster network: the value is applied")
		node := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "late-1"}, node)).To(Succeed())
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels[settings.ClusterNetworkLabelPrefix+"migration"] = "true"
		Expect(f.Client.Patch(ctx, node, patch)).To(Succeed())
		Eventually(condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
			WithTimeout(framework.Short).Should(Equal("True/" + settingscontroller.ReasonApplied))
		Eventually(kubeVirtNetwork).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(expectedNAD(net25)))
		Eventually(managedNADs).WithContext(ctx).WithTimeout(framework.Short).Should(Equal([]string{expectedNAD(net25)}))
		Expect(strings.Contains(configuredMessage(ctx), "stays in force")).To(BeFalse())
	})
})
