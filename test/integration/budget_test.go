package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// setBudgetPolicy writes the migration policy's value (the budget and nothing else).
func setBudgetPolicy(ctx context.Context, value string) {
	GinkgoHelper()
	p := &v1beta1.Setting{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, p)).To(Succeed())
	patch := client.MergeFrom(p.DeepCopy())
	p.Value = value
	Expect(f.Client.Patch(ctx, p, patch)).To(Succeed())
}

// shapingOf is each node's migration traffic as its agent reports it: "<shaping> <budget>"
// (the budget as a quantity, "none" without one).
func shapingOf(ctx context.Context) map[string]string {
	GinkgoHelper()
	reports := &v1beta1.PathReportList{}
	Expect(f.Client.List(ctx, reports)).To(Succeed())
	out := map[string]string{}
	for _, r := range reports.Items {
		if m := r.Migration; m != nil {
			budget := "none"
			if m.BudgetBytesPerSecond > 0 {
				budget = resource.NewQuantity(m.BudgetBytesPerSecond, resource.BinarySI).String()
			}
			out[r.Name] = m.Shaping + " " + budget
		}
	}
	return out
}

var _ = Describe("the migration budget through the real probe agents", func() {
	BeforeEach(requireProbedNetworks)

	// Faults caught: an agent that does not watch the migration policy or its Node's labels (a
	// change applied only at its restart), an override that does not reach the node it selects,
	// shaping not removed with the budget, and `migranet status --nodes` as installed not saying
	// what the agents report (a flag not registered, a report read from the wrong object).
	It("shapes every node to its budget, follows a live change and an override by label, and migranet status --nodes says so", func(ctx context.Context) {
		setValue(ctx, net1500)
		waitReady(ctx, netcontroller.ReasonReady)
		DeferCleanup(func(ctx context.Context) {
			setBudgetPolicy(ctx, "")
			n := &corev1.Node{}
			Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-3"}, n)).To(Succeed())
			patch := client.MergeFrom(n.DeepCopy())
			delete(n.Labels, "migranet.io/nic")
			Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
		})
		By("a budget of 64Mi each way, node-3 (labelled 25g) overridden to 128Mi: applied by every agent within a round")
		n := &corev1.Node{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-3"}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels["migranet.io/nic"] = "25g"
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
		setBudgetPolicy(ctx, `{"budget":{"bandwidth":"64Mi","nodes":[{"selector":{"migranet.io/nic":"25g"},"bandwidth":"128Mi"}]}}`)
		Eventually(shapingOf).WithContext(ctx).WithTimeout(framework.Long).Should(Equal(map[string]string{
			"node-1": "Enforced 64Mi", "node-2": "Enforced 64Mi", "node-3": "Enforced 128Mi"}))
		code, stdout, stderr := migranetStatus(ctx, "--nodes")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(ContainSubstring("budget: 64Mi/s to 128Mi/s each way on 3 of 3 nodes, shaped on 3"))
		Expect(stdout).To(MatchRegexp(`node-3\s+128Mi/s \(migranet.io/nic=25g\)\s+Enforced`))
		Expect(stdout).To(MatchRegexp(`node-1\s+64Mi/s\s+Enforced`))
		By("the listing's header says it too")
		code, stdout, stderr = migranetStatus(ctx, "-A")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(ContainSubstring("budget: 64Mi/s to 128Mi/s each way on 3 of 3 nodes"))

		By("the label removed from node-3 while the budget stays: back to the budget's own, no agent restarted")
		restarts := f.ProbeAgents.Restarts("node-3")
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-3"}, n)).To(Succeed())
		patch = client.MergeFrom(n.DeepCopy())
		delete(n.Labels, "migranet.io/nic")
		Expect(f.Client.Patch(ctx, n, patch)).To(Succeed())
		Eventually(shapingOf).WithContext(ctx).WithTimeout(framework.Long).Should(HaveKeyWithValue("node-3", "Enforced 64Mi"))
		Expect(f.ProbeAgents.Restarts("node-3")).To(Equal(restarts))

		By("the budget removed: shaping Off everywhere, and the header line gone")
		setBudgetPolicy(ctx, "")
		Eventually(shapingOf).WithContext(ctx).WithTimeout(framework.Long).Should(Equal(map[string]string{
			"node-1": "Off none", "node-2": "Off none", "node-3": "Off none"}))
		code, stdout, stderr = migranetStatus(ctx, "--nodes")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).NotTo(ContainSubstring("budget:"))
		Expect(stdout).To(MatchRegexp(`node-2\s+-\s+Off`))
	})
})
