package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

var _ = Describe("a probe agent gone silent", func() {
	BeforeEach(requireProbedNetworks)

	// Faults caught: a hung agent that only turns its pairs Unknown (no Healthy=False, no Warning
	// event: nobody notices, as in issue 53), a warning that does not say the agent is silent, a
	// round watchdog that lets /healthz answer ok while no round ends, and a lab whose kubelet
	// stand-in runs no liveness probe (kwok runs none), so that the hung agent is never restarted
	// and its pairs stay unverified. The agent hangs inside a round, in a read that never returns
	// (sim.ProbeAgents.Hang): it writes no report, but still answers its peers' probes and its
	// health checks, so only its watchdog can fail /healthz (the DaemonSet's liveness probe: every
	// 10 s, 3 failures) and have it restarted.
	It("is named AgentSilent in Healthy, an event and admission's warning, then restarted by its liveness probe", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		start := time.Now()
		cond := func(ctx context.Context) string { c, _ := healthy(ctx); return c }
		freshEventBudget(ctx)
		setValue(ctx, net1500)
		waitReady(ctx, netcontroller.ReasonReady)
		hangable := time.Now()
		Expect(f.ProbeAgents.Hangable("node-2")).To(Succeed())
		Eventually(func(g Gomega) {
			r := &v1beta1.PathReport{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: "node-2"}, r)).To(Succeed())
			g.Expect(r.LastRound).NotTo(BeNil())
			g.Expect(r.LastRound.Started.Time).To(BeTemporally(">", hangable), "a round of the agent started Hangable")
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		restarts := f.ProbeAgents.Restarts("node-2")

		By("node-2's agent hangs in a round: named AgentSilent within its bound (3 rounds of 4 s), no path failing")
		Expect(f.ProbeAgents.Hang("node-2")).To(Succeed())
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(And(
			HavePrefix("False/"+netcontroller.ReasonAgentSilent+": no path fails, but the probe agent of node node-2"), Not(ContainSubstring("node-1")), Not(ContainSubstring("node-3"))))
		Expect(f.ProbeAgents.Restarts("node-2")).To(Equal(restarts), "named before its liveness probe restarted it")
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Long).Should(ContainElement(
			HavePrefix("Warning " + netcontroller.ReasonAgentSilent + ": ")))
		Expect(f.Client.Create(ctx, framework.VMI(ns, "vm-a", "node-1", nil))).To(Succeed())
		stderr, err := dryRun(vmimToYAML(ns, "to-2", "vm-a", "node-2"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("node-2: node-2's probe agent is silent (AgentSilent)"))

		By("its liveness probe fails: the kubelet stand-in restarts it, and every pair is verified again")
		Eventually(f.ProbeAgents.Restarts).WithArguments("node-2").WithTimeout(2 * framework.Long).Should(BeNumerically(">", restarts))
		// Its watchdog's answer, not a probe that timed out: the process answered all along.
		Expect(f.ProbeAgents.RestartReason("node-2")).To(ContainSubstring("failed 3 times in a row: HTTP 503: no probe round finished since"))
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Long).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
	})
})
