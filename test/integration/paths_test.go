package integration

import (
	"context"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// pathReporter writes PathReports as the probe agents would: one per attached node, named after
// it, on the current network.
type pathReporter struct {
	network string
	since   time.Time
}

// report writes node's report: a round that just completed, every `interval`, with failing.
func (p pathReporter) report(ctx context.Context, node string, interval time.Duration, failing ...v1beta1.PeerPath) {
	now := time.Now()
	r := &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}}
	err := f.Client.Get(ctx, client.ObjectKey{Name: node}, r)
	if err != nil && !apierrors.IsNotFound(err) {
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	r.Network, r.MTU, r.IntervalSeconds = p.network, 1500, int32(interval/time.Second)
	r.Since = metav1.NewMicroTime(p.since)
	r.LastRound = &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-1500 * time.Millisecond)), Completed: metav1.NewMicroTime(now),
		Peers: 2, Failing: int32(len(failing))}
	r.Failing = failing
	if apierrors.IsNotFound(err) {
		ExpectWithOffset(1, f.Client.Create(ctx, r)).To(Succeed())
		return
	}
	ExpectWithOffset(1, f.Client.Update(ctx, r)).To(Succeed())
}

func deletePathReports(ctx context.Context) {
	Expect(f.Client.DeleteAllOf(ctx, &v1beta1.PathReport{})).To(Succeed())
}

// healthy is "<status>/<reason>" of the Healthy condition and status.paths.
func healthy(ctx context.Context) (string, *v1beta1.PathsStatus) {
	s := setting(ctx)
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionHealthy)
	if c == nil {
		return "absent", s.Status.Paths
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message, s.Status.Paths
}

var _ = Describe("migration path health", func() {
	BeforeEach(func() { DeferCleanup(resetToPodNetwork) })

	It("follows the agents' PathReports: Healthy True, False naming the failing pair, True again, Unknown once a report goes stale", func(ctx context.Context) {
		s := newScraper(ctx)
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		DeferCleanup(deletePathReports)
		var attached []string
		for _, n := range setting(ctx).Status.Nodes {
			if n.Reason == "" {
				attached = append(attached, n.Name)
			}
		}
		sort.Strings(attached)
		Expect(len(attached)).To(BeNumerically(">=", 3), "the suite's cluster has three attached nodes or more")
		pairs := int32(len(attached) * (len(attached) - 1) / 2)
		rep := pathReporter{network: cluster.KubeVirtNamespace + "/" + expectedNAD(net24), since: time.Now().Add(-time.Minute)}
		cond := func(ctx context.Context) string { c, _ := healthy(ctx); return c }
		paths := func(ctx context.Context) *v1beta1.PathsStatus { _, p := healthy(ctx); return p }
		metrics := func(g Gomega) map[string]float64 {
			m, err := s.scrape(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			return m
		}

		By("no report yet: Unknown, NotProbed")
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(HavePrefix("Unknown/" + netcontroller.ReasonNotProbed + ": "))

		By("every agent reports a clean round: Healthy True, every pair verified")
		start := time.Now()
		for _, n := range attached {
			rep.report(ctx, n, 20*time.Second)
		}
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		Eventually(paths).WithContext(ctx).WithTimeout(framework.Long).Should(HaveValue(And(
			HaveField("Pairs", pairs), HaveField("Verified", pairs), HaveField("Failing", BeZero()), HaveField("Unverified", BeZero()))))

		By("the first node's full-MTU frames do not reach the second: False, the pair in status.paths, the gauges, a Warning event")
		a, b := attached[0], attached[1]
		rep.report(ctx, a, 20*time.Second, v1beta1.PeerPath{Node: b, Address: "192.168.100.99", Reason: v1beta1.PathMTU, Largest: 1400})
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(And(
			HavePrefix("False/"+netcontroller.ReasonPathsFailing+": "), ContainSubstring("1500-byte frames from "+a+" to "+b+" do not arrive")))
		Expect(paths(ctx)).To(HaveValue(And(HaveField("Failing", int32(1)), HaveField("Verified", pairs-1),
			HaveField("Failures", ConsistOf(And(HaveField("From", a), HaveField("To", b), HaveField("Reason", v1beta1.PathMTU),
				HaveField("Message", ContainSubstring("largest that crossed: 1400"))))))))
		Eventually(func(g Gomega) {
			m := metrics(g)
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPaths, "state", "failing"), 1.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPaths, "state", "verified"), float64(pairs-1)))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPathsFailing, "reason", v1beta1.PathMTU), 1.0))
			g.Expect(m).To(HaveKeyWithValue(series(netcontroller.MetricPathsFailing, "reason", v1beta1.PathUnreachable), 0.0))
			g.Expect(m).To(HaveKey(netcontroller.MetricProbeRound))
		}).WithTimeout(framework.Short).Should(Succeed())
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Short).Should(ContainElement(And(
			HavePrefix("Warning "+netcontroller.ReasonPathsFailing+": "), ContainSubstring(a), ContainSubstring(b))))

		By("the next round is clean: True again, a Normal PathsHealthy event, the gauges back at 0")
		rep.report(ctx, a, 20*time.Second)
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(HavePrefix("True/" + netcontroller.ReasonPathsVerified))
		Expect(paths(ctx)).To(HaveValue(And(HaveField("Failing", BeZero()), HaveField("Failures", BeEmpty()))))
		Eventually(settingEvents).WithContext(ctx).WithArguments(start).WithTimeout(framework.Short).Should(ContainElement(
			HavePrefix("Normal " + netcontroller.ReasonPathsHealthy + ": ")))
		Eventually(func(g Gomega) {
			g.Expect(metrics(g)).To(HaveKeyWithValue(series(netcontroller.MetricPaths, "state", "failing"), 0.0))
		}).WithTimeout(framework.Short).Should(Succeed())

		By("the last node's agent stops reporting: its results go stale with no event on any object, Healthy turns Unknown naming it")
		last := attached[len(attached)-1]
		rep.report(ctx, last, time.Second) // fresh for three seconds
		stale := time.Now().Add(3 * time.Second)
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(And(
			HavePrefix("Unknown/"+netcontroller.ReasonPathsUnverified+": "), ContainSubstring("node "+last+" is without fresh probe results")))
		Expect(time.Now()).To(BeTemporally(">=", stale), "not before the report went stale")
		Expect(paths(ctx)).To(HaveValue(HaveField("Unverified", BeNumerically(">=", 1))), fmt.Sprintf("%d pairs", pairs))

		By("back on the pod network: no Healthy condition, no status.paths")
		resetToPodNetwork(ctx)
		Eventually(cond).WithContext(ctx).WithTimeout(framework.Short).Should(Equal("absent"))
		Expect(paths(ctx)).To(BeNil())
	})
})
