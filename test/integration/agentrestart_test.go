package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

var _ = Describe("a probe agent restarted", func() {
	BeforeEach(requireProbedNetworks)

	// Faults caught: a restarted agent that starts from nothing (a new since: its peers' rounds
	// no longer cover it, Healthy Unknown until they probe it again, as in 13 of 45 readings of
	// the rolling update in issue 53), and one that loses a failure's start (a failure known
	// before a migration would look new to the abort rule).
	It("keeps Healthy and the failures' start across restarts of the same pod", func(ctx context.Context) {
		cond := func(ctx context.Context) string { c, _ := healthy(ctx); return c }
		report := func(ctx context.Context, node string) *v1beta1.PathReport {
			r := &v1beta1.PathReport{}
			ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: node}, r)).To(Succeed())
			return r
		}
		setValue(ctx, net1500)
		waitReady(ctx, netcontroller.ReasonReady)
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		since := report(ctx, "node-2").Since

		By("node-2's agent killed twice, as a crash or a restart of its container: Healthy stays True")
		for range 2 {
			Expect(f.ProbeAgents.Kill("node-2")).To(BeTrue())
			Consistently(cond).WithContext(ctx).WithPolling(100 * time.Millisecond).WithTimeout(12 * time.Second).
				Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		}
		Expect(report(ctx, "node-2").Since.Time).To(BeTemporally("==", since.Time), "the report's since kept")

		By("a failing path's start survives a restart of the agent that reports it")
		setUplinkMTU(ctx, "node-3", 1400)
		DeferCleanup(setUplinkMTU, "node-3", 1500)
		var began *metav1.MicroTime
		Eventually(func(g Gomega) {
			r := report(ctx, "node-1")
			g.Expect(r.Failing).To(ContainElement(HaveField("Node", "node-3")))
			began = r.Failing[0].Since
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		Expect(f.ProbeAgents.Kill("node-1")).To(BeTrue())
		killed := report(ctx, "node-1").LastRound.Started.Time
		Eventually(func(g Gomega) {
			r := report(ctx, "node-1")
			g.Expect(r.LastRound.Started.Time).To(BeTemporally(">", killed), "a round of the new process")
			g.Expect(r.Failing).To(ContainElement(And(HaveField("Node", "node-3"), HaveField("Since", HaveValue(HaveField("Time", BeTemporally("==", began.Time)))))))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
	})
})
