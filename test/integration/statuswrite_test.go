package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// refuseSettingStatus makes the API server refuse every write of a Setting's status, as it
// refused the float64-rounded counts of an IPv6 range, until the returned func lifts it.
func refuseSettingStatus(ctx context.Context) func(context.Context) {
	GinkgoHelper()
	const name = "refuse-setting-status"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{v1beta1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"settings/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "status writes refused by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	Expect(f.Client.Create(ctx, policy)).To(Succeed())
	Expect(f.Client.Create(ctx, binding)).To(Succeed())
	lift := func(ctx context.Context) {
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, policy))).To(Succeed())
	}
	DeferCleanup(lift)
	// Enforced once the API server's informers have the policy: wait until a dry-run write is refused.
	Eventually(func() error {
		s := setting(ctx)
		patch := client.MergeFrom(s.DeepCopy())
		s.Status.Summary += " (probe)"
		return f.Client.Status().Patch(ctx, s, patch, client.DryRunAll)
	}).WithContext(ctx).WithTimeout(framework.Short).Should(MatchError(ContainSubstring("status writes refused by the test")))
	return lift
}

var _ = Describe("a refused status write", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	// Catches: a refused status write only logged (no event, nothing for an admin reading the
	// setting), or not counted as a failed status step.
	It("is a Warning event on the setting and a failed status step, and the status catches up once writes pass", func(ctx context.Context) {
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		sc := newScraper(ctx)
		errSteps := series(statuswrite.MetricReconcileSteps, "controller", netcontroller.ControllerName, "step", netcontroller.StepStatus, "result", statuswrite.StepError)
		before, err := sc.scrape(ctx)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		lift := refuseSettingStatus(ctx)

		victim := virtHandlers(ctx)[0]
		By("force-deleting " + victim.Name + ": the network controller has a new observation to write")
		Expect(f.Client.Delete(ctx, &victim, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(refusedStatusEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Short).Should(ContainElement(And(
			HavePrefix("Warning "+netcontroller.ReasonStatusWriteFailed+": "), ContainSubstring("status writes refused by the test"))))
		Eventually(func(g Gomega) {
			after, err := sc.scrape(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(after[errSteps]).To(BeNumerically(">", before[errSteps]))
		}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())

		lift(ctx)
		Eventually(func(g Gomega) {
			g.Expect(condition(ctx, v1beta1.ConditionReady)).To(Equal("True/" + netcontroller.ReasonReady))
			nodes := setting(ctx).Status.Nodes
			g.Expect(nodes).To(HaveLen(3))
			g.Expect(nodes).To(HaveEach(HaveField("Reason", "")))
			for _, p := range virtHandlers(ctx) {
				g.Expect(p.Name).NotTo(Equal(victim.Name))
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	})
})
