package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
)

// rangeValue is a valid value whose range is 10.<a>.<b>.0/24.
func rangeValue(a, b int) string {
	return fmt.Sprintf(`{"clusterNetwork":"migration","vlan":%d,"range":"10.%d.%d.0/24"}`, 10+b, a, b)
}

// expectConverged checks that the cluster matches the setting's current value: Configured for the
// current generation, exactly the one NAD it renders to (none when disabled), and the KubeVirt CR
// pointing at it.
func expectConverged(ctx context.Context, value string) {
	EventuallyWithOffset(1, condition).WithContext(ctx).WithArguments(v1beta1.ConditionConfigured).
		WithTimeout(framework.Long).Should(HavePrefix("True/"))
	want, nads := "", []string(nil)
	if value != "" {
		want = expectedNAD(value)
		nads = []string{want}
	}
	EventuallyWithOffset(1, managedNADs).WithContext(ctx).WithTimeout(framework.Short).Should(Equal(nads))
	ExpectWithOffset(1, kubeVirtNetwork(ctx)).To(Equal(want))
	if value != "" {
		ExpectWithOffset(1, setting(ctx).Status.AppliedHash).To(Equal(mustHash(value)))
	}
}

var _ = Describe("convergence under pressure", func() {
	// Registered from BeforeEach, this cleanup runs after the test's own (its namespace and
	// migrations are gone by then), unlike an AfterEach.
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })
	It("ends 20 edits made within 2 s with exactly the last NAD", func(ctx context.Context) {
		var last string
		for i := range 20 {
			last = rangeValue(60, i)
			setValue(ctx, last)
			time.Sleep(100 * time.Millisecond)
		}
		expectConverged(ctx, last)
		waitReady(ctx, netcontroller.ReasonReady)
	})

	It("converges after the manager is SIGKILLed at random moments of a reconcile, 50 times", func(ctx context.Context) {
		// What is tested is convergence after a crash, not the lease hand-over (the load spec
		// covers that): without leader election a restarted replica starts its controllers at
		// once instead of waiting out the killed one's lease.
		// The other replicas stop meanwhile: without leader election they would run controllers too.
		f.StopReplicas()
		f.Manager.ExtraArgs = []string{"--leader-elect=false"}
		Expect(f.Manager.Start(ctx)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			f.Manager.ExtraArgs = nil
			f.Manager.Stop()
			Expect(f.StartReplicas(ctx)).To(Succeed())
		})
		rnd := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), 50))
		values := []string{rangeValue(61, 1), rangeValue(61, 2), "", rangeValue(61, 3)}
		for run := range 50 {
			value := values[rnd.IntN(len(values))]
			setValue(ctx, value)
			time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond)
			f.Manager.Kill()
			Expect(f.Manager.Start(ctx)).To(Succeed(), "restart %d", run)
			By(fmt.Sprintf("run %d: killed, restarted, checking convergence on %q", run, value))
			expectConverged(ctx, value)
		}
		Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
	})
})
