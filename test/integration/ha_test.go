package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// vmimTimeout is the migration webhook's timeoutSeconds (manifests/webhook/manifests.yaml).
const vmimTimeout = 5 * time.Second

// productionLease restores the manager's default leader-election timings (flags given twice:
// the last one counts).
var productionLease = []string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}

// outcome is what one create got back.
type outcome struct {
	feasible bool
	err      error
	// start is when the create was sent, took how long it took.
	start time.Time
	took  time.Duration
}

// requestKey keys a create's index in its context, for the warning collector.
type requestKey struct{}

// warnings collects the API server's warnings per create (keyed by the index in the context).
type warnings struct {
	mu  sync.Mutex
	got map[int][]string
}

func (w *warnings) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	i, ok := ctx.Value(requestKey{}).(int)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got[i] = append(w.got[i], text)
}

// webhookCalls reads the API server's own histogram of its calls to migranet's migration webhook
// (apiserver_admission_webhook_admission_duration_seconds, classic buckets up to 2.5, 10, 25 s)
// and returns how many calls it made and how many ended within 2.5 s. A call that ends in the
// webhook's timeoutSeconds (5 s) lands above 2.5 s; a refused or reset connection ends at once.
func webhookCalls(ctx context.Context) (calls, fast float64) {
	raw, err := f.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	const family = "apiserver_admission_webhook_admission_duration_seconds"
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, `name="vmim.migranet.io"`) || !strings.Contains(line, `operation="CREATE"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, family+"_count{"):
			calls += v
		case strings.HasPrefix(line, family+"_bucket{") && strings.Contains(line, `le="2.5"`):
			fast += v
		}
	}
	return calls, fast
}

// notJudged is the start of migranet's own fail-open warning (webhook/failopen.go).
const notJudged = "migranet could not judge this request"

var _ = Describe("two webhook replicas under load", func() {
	It("answer 1,000 concurrent migration creates, consistent with failurePolicy Ignore, while one replica is killed and restarted", func(ctx context.Context) {
		const n = 1000
		// Both replicas use the manager's default lease timings here: the suite's short ones
		// (which let the crash specs restart a killed leader quickly) cannot hold a lease while
		// 1,000 requests starve two cores.
		// Both are restarted, since a flag reaches only a started process (CI: the first, left
		// running with the short lease, lost it under the creates and exited). A stopped leader
		// leaves its lease to expire: until a restarted replica holds it, no controller runs (CI:
		// the new leader applied a pending change of the network as the creates began, and the
		// virt-handler rollout it started had KubeVirt refuse them all). So the lease is waited
		// for (cmd/migranet: LeaderElectionID migranet.io), renewed after the restarts, and then
		// the network and KubeVirt.
		restartAll := func(ctx context.Context, args []string) {
			for _, r := range f.Replicas {
				r.ExtraArgs = args
				r.Stop()
				Expect(r.Start(ctx)).To(Succeed())
			}
			restarted := time.Now()
			Eventually(func(g Gomega) {
				l := &coordinationv1.Lease{}
				g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet.io"}, l)).To(Succeed())
				g.Expect(l.Spec.RenewTime).NotTo(BeNil())
				g.Expect(l.Spec.RenewTime.Time).To(BeTemporally(">", restarted), "a restarted replica leads")
			}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
			waitReady(ctx, netcontroller.ReasonPodNetwork)
		}
		second := f.Replicas[1]
		restartAll(ctx, productionLease)
		DeferCleanup(func(ctx context.Context) { restartAll(ctx, nil) })
		Expect(f.Service.Ready()).To(ConsistOf(f.Manager.Name, second.Name))

		callsBefore, fastBefore := webhookCalls(ctx)

		ns := f.Namespace(ctx)
		By("creating 1,000 running VMIs: even ones can move anywhere, odd ones only to their own node (refused)")
		vmims := make([]*kubevirtv1.VirtualMachineInstanceMigration, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			var sel map[string]string
			if i%2 == 1 {
				sel = map[string]string{"kubernetes.io/hostname": "node-1"}
			}
			vmi := framework.VMI(ns, fmt.Sprintf("vm-%04d", i), "node-1", sel)
			vmims[i] = framework.VMIM(ns, fmt.Sprintf("mig-%04d", i), vmi.Name, nil)
			wg.Add(1)
			go func() { defer wg.Done(); errs <- f.Client.Create(ctx, vmi) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		By("waiting until both replicas' caches hold the VMI created last (dry-run reviews sent to each replica)")
		// Informers apply events in resourceVersion order: a replica that has the VMI with the
		// highest resourceVersion has them all. The goroutines above finished in any order.
		vmis := &kubevirtv1.VirtualMachineInstanceList{}
		Expect(f.Client.List(ctx, vmis, client.InNamespace(ns))).To(Succeed())
		Expect(vmis.Items).To(HaveLen(n))
		last, lastRV := "", int64(-1)
		for _, v := range vmis.Items {
			if rv, err := strconv.ParseInt(v.ResourceVersion, 10, 64); err == nil && rv > lastRV {
				last, lastRV = v.Name, rv
			}
		}
		// Each replica asked itself: through the Service, the API server's kept-alive connection
		// may reach the same replica every time (seen in CI: the other one, restarted just before,
		// refused 313 of the creates below with "not found" while its cache caught up).
		probe := framework.VMIM(ns, "probe", last, nil)
		for _, r := range []*env.Manager{f.Manager, second} {
			// The near miss: a VMI no replica can hold is refused by each, so the wait below
			// reads each replica's own judgement.
			refusal, err := replicaRefusal(ctx, f.Client, r, framework.VMIM(ns, "probe", "no-such-vmi", nil))
			Expect(err).NotTo(HaveOccurred())
			Expect(refusal).To(ContainSubstring("not found: create the VMI first"), r.Name)
		}
		Eventually(func(g Gomega) {
			for _, r := range []*env.Manager{f.Manager, second} {
				refusal, err := replicaRefusal(ctx, f.Client, r, probe)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(refusal).NotTo(ContainSubstring("not found: create the VMI first"), r.Name)
			}
		}).WithTimeout(framework.Long).Should(Succeed())

		By("creating all migrations at once; once 50 have been answered, the first replica is SIGKILLed and then restarted")
		// A client of its own collects each create's warnings: migranet's own fail-open (a replica
		// that answered without judging) says so in one.
		collected := &warnings{got: map[int][]string{}}
		cfg := rest.CopyConfig(f.Config)
		cfg.WarningHandlerWithContext = collected
		c, err := client.New(cfg, client.Options{Scheme: f.Client.Scheme(), Mapper: f.Client.RESTMapper()})
		Expect(err).NotTo(HaveOccurred())
		results := make([]outcome, n)
		start := make(chan struct{})
		answered := make(chan struct{}, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t0 := time.Now()
				rctx, cancel := context.WithTimeout(context.WithValue(ctx, requestKey{}, i), 60*time.Second)
				defer cancel()
				err := c.Create(rctx, vmims[i].DeepCopy())
				results[i] = outcome{feasible: i%2 == 0, err: err, start: t0, took: time.Since(t0)}
				answered <- struct{}{}
			}()
		}
		began := time.Now()
		close(start)
		for range 50 {
			<-answered
		}
		killed := time.Now()
		f.Manager.Kill()
		killedAt := killed.Sub(began)
		// The window in which a create may find no replica although one is up: from the kill until
		// the Service stops routing to the dead replica (its next probe) or the replica serves
		// again. Connections are not retried elsewhere (kube-proxy), so creates routed to the dead
		// one then fail open, at once (connection refused or reset).
		unrouted, done := make(chan time.Time, 1), make(chan struct{})
		go func() {
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				if !slices.Contains(f.Service.Ready(), f.Manager.Name) {
					unrouted <- time.Now()
					return
				}
				select {
				case <-done:
					return
				case <-tick.C:
				}
			}
		}()
		restarted := make(chan error, 1)
		var restartedAt time.Time
		go func() { err := f.Manager.Start(ctx); restartedAt = time.Now(); restarted <- err }()
		wg.Wait()
		wall := time.Since(began)
		Expect(<-restarted).To(Succeed())
		close(done)
		windowEnd := restartedAt
		select {
		case t := <-unrouted:
			windowEnd = t
		default: // restarted before the Service noticed: the window ends at the restart
		}

		var admitted, refused, failedOpen int
		var other, outsideWindow, unjudged []string
		took := make([]time.Duration, 0, n)
		for i, r := range results {
			took = append(took, r.took)
			for _, w := range collected.got[i] {
				if strings.Contains(w, notJudged) {
					unjudged = append(unjudged, fmt.Sprintf("%s: %s", vmims[i].Name, w))
				}
			}
			switch {
			case r.err == nil && r.feasible:
				admitted++
			case r.err == nil:
				failedOpen++ // a refusal the webhook could not deliver: Ignore lets it through
				// The kill explains a fail-open only for a create that was sent before the Service
				// stopped routing to the dead replica and ended after the kill.
				if !r.start.Before(windowEnd) || !r.start.Add(r.took).After(killed) {
					outsideWindow = append(outsideWindow, fmt.Sprintf("%s sent %s after the start, answered in %s",
						vmims[i].Name, r.start.Sub(began).Round(time.Millisecond), r.took.Round(time.Millisecond)))
				}
			case !r.feasible && apierrors.IsInvalid(r.err) && strings.Contains(r.err.Error(), "vmim.migranet.io") &&
				strings.Contains(r.err.Error(), "no node can receive"):
				refused++
			default:
				other = append(other, r.err.Error())
			}
		}
		slices.Sort(took)
		p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))].Round(time.Millisecond) }
		window := windowEnd.Sub(killed).Round(time.Millisecond)
		AddReportEntry("load", fmt.Sprintf("%d creates in %s (killed at %s, unrouted %s later): %d feasible admitted, %d refused, %d failed open; latency p50 %s p99 %s max %s",
			n, wall.Round(time.Millisecond), killedAt.Round(time.Millisecond), window, admitted, refused, failedOpen, p(0.5), p(0.99), took[n-1].Round(time.Millisecond)))
		GinkgoWriter.Printf("load: %d creates in %s: %d admitted, %d refused, %d failed open; p50 %s p99 %s max %s\n",
			n, wall, admitted, refused, failedOpen, p(0.5), p(0.99), took[n-1])
		Expect(other).To(BeEmpty(), "answers that failurePolicy Ignore does not explain")
		Expect(admitted).To(Equal(n/2), "every feasible migration is created")
		Expect(refused + failedOpen).To(Equal(n / 2))
		Expect(refused).To(BeNumerically(">", 0), "the replicas refused infeasible migrations")
		Expect(unjudged).To(BeEmpty(), "a replica that answered admitted without judging (migranet's own fail-open)")
		Expect(outsideWindow).To(BeEmpty(), "infeasible migrations admitted because no replica answered although one was up: "+
			"sent after the Service had stopped routing to the killed replica (%s after the kill)", window)
		By("the API server called migranet for every create")
		calls, fast := webhookCalls(ctx)
		calls, fast = calls-callsBefore, fast-fastBefore
		AddReportEntry("webhook calls", fmt.Sprintf("%d calls by the API server, %d longer than 2.5s", int(calls), int(calls-fast)))
		GinkgoWriter.Printf("webhook calls: %d by the API server, %d longer than 2.5s\n", int(calls), int(calls-fast))
		Expect(calls).To(BeNumerically(">=", n), "the API server called migranet for every create")
		// A call that ran into timeoutSeconds was failed open by the API server and is counted, and
		// bounded to the kill window, above; the slow-call count is a figure, not a gate (a loaded
		// machine answers in seconds and is still right).
		Expect(took[n-1]).To(BeNumerically("<", hungCreate), "no create hangs")
		Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		Expect(f.Service.Ready()).To(ConsistOf(f.Manager.Name, second.Name))
	})
})
