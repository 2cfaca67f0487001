package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// The chaos suite runs the install as shipped (two replicas behind the Service, the migration
// network configured and Ready) and breaks it one way at a time while a storm of migration
// creates (server-side dry runs: each crosses admission exactly like a create, and none stays in
// flight to block the next) runs against the real API server. Every answer is classified:
//   - admitted: a feasible migration admitted;
//   - refused: an infeasible one refused by migranet's feasibleTarget;
//   - failed open: an infeasible one admitted (no replica answered; failurePolicy Ignore);
//   - unavailable: the API server itself did not answer (it was restarting);
//   - wrong: anything else — a feasible migration refused (e.g. networkReady on a replica that
//     is not the leader), or a refusal for another reason.

// stormOutcome is one answer of the storm.
type stormOutcome struct {
	feasible bool
	err      error
	start    time.Time
	took     time.Duration
}

// stormFigures counts a storm's answers.
type stormFigures struct {
	admitted, refused, failedOpen, unavailable int
	wrong                                      []string
	openAt                                     []time.Time
	max                                        time.Duration
}

func (s stormFigures) String() string {
	return fmt.Sprintf("%d admitted, %d refused, %d failed open, %d API unavailable, %d wrong; slowest %s",
		s.admitted, s.refused, s.failedOpen, s.unavailable, len(s.wrong), s.max.Round(time.Millisecond))
}

// stormVMIs creates n running VMIs in ns: even ones can move to another node (feasible), odd ones
// are pinned to their own (migranet refuses them: feasibleTarget). It waits until every replica's
// cache holds them all.
func stormVMIs(ctx context.Context, ns string, n int) []*kubevirtv1.VirtualMachineInstance {
	vmis := make([]*kubevirtv1.VirtualMachineInstance, n)
	for i := range n {
		var sel map[string]string
		if i%2 == 1 {
			sel = map[string]string{"kubernetes.io/hostname": "node-1"}
		}
		vmis[i] = framework.VMI(ns, fmt.Sprintf("vm-%03d", i), "node-1", sel)
		Expect(f.Client.Create(ctx, vmis[i])).To(Succeed())
	}
	last := framework.VMIM(ns, "probe", vmis[n-1].Name, nil)
	Eventually(func(g Gomega) {
		// 20 answers in a row from randomly chosen replicas: every one has answered.
		for range 20 {
			err := f.Client.Create(ctx, last.DeepCopy(), client.DryRunAll)
			g.Expect(err == nil || !strings.Contains(err.Error(), "not found: create the VMI first")).To(BeTrue(), "%v", err)
		}
	}).WithTimeout(framework.Long).Should(Succeed())
	return vmis
}

// storm runs workers that dry-run-create migrations of vmis in turn, at least least of them and
// until disrupt has returned, and classifies every answer.
func storm(ctx context.Context, vmis []*kubevirtv1.VirtualMachineInstance, least int, disrupt func()) stormFigures {
	const workers = 16
	var (
		mu   sync.Mutex
		outs []stormOutcome
		sent atomic.Int64
		done atomic.Bool
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer GinkgoRecover()
			for i := w; !done.Load() || sent.Load() < int64(least); i += workers {
				sent.Add(1)
				vmi := vmis[i%len(vmis)]
				vmim := framework.VMIM(vmi.Namespace, fmt.Sprintf("storm-%06d", i), vmi.Name, nil)
				rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				t0 := time.Now()
				err := f.Client.Create(rctx, vmim, client.DryRunAll)
				cancel()
				mu.Lock()
				outs = append(outs, stormOutcome{feasible: vmi.Spec.NodeSelector == nil, err: err, start: t0, took: time.Since(t0)})
				mu.Unlock()
			}
		}()
	}
	// The disruption strikes a storm in progress: once the first 50 answers are in.
	Eventually(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(outs)
	}).WithTimeout(framework.Long).Should(BeNumerically(">=", min(50, least)))
	disrupt()
	done.Store(true)
	wg.Wait()
	var fig stormFigures
	for _, o := range outs {
		fig.max = max(fig.max, o.took)
		switch {
		case o.err == nil && o.feasible:
			fig.admitted++
		case o.err == nil:
			fig.failedOpen++
			fig.openAt = append(fig.openAt, o.start)
		case !o.feasible && apierrors.IsInvalid(o.err) && strings.Contains(o.err.Error(), "migranet feasibleTarget"):
			fig.refused++
		case !apierrors.IsInvalid(o.err) && !apierrors.IsForbidden(o.err) && !strings.Contains(o.err.Error(), "admission webhook"):
			fig.unavailable++ // connection refused, 503, timeouts: the API server did not answer
		default:
			fig.wrong = append(fig.wrong, fmt.Sprintf("feasible=%v: %v", o.feasible, o.err))
		}
	}
	return fig
}

// waitAllReady waits until every replica runs, is ready and is routed to; like the kubelet, it
// restarts a replica that exited, and returns how many it restarted.
func waitAllReady(ctx context.Context) int {
	restarted := 0
	for _, r := range f.Replicas {
		if r.Exited() {
			r.Stop() // reap
			restarted++
		}
	}
	Expect(f.StartReplicas(ctx)).To(Succeed())
	Eventually(f.Service.Ready).WithTimeout(framework.Long).Should(HaveLen(len(f.Replicas)))
	return restarted
}

// hungCreate is where a create stops being slow and is hanging: ten times the longest create the
// storms measured on a 2-core machine (0.1 s here, 1.9 s in the HA spec). A webhook that hangs
// until the API server cuts it at timeoutSeconds shows as a fail-open (or a refusal), which the
// specs count exactly; this bound only catches a request nothing ever answers.
const hungCreate = 20 * time.Second

var _ = Describe("chaos: the install as shipped, broken one way at a time", Ordered, func() {
	var vmis []*kubevirtv1.VirtualMachineInstance

	BeforeAll(func(ctx context.Context) {
		Expect(f.Replicas).To(HaveLen(env.DefaultReplicas), "the environment runs the Deployment's replica count")
		setValue(ctx, net24)
		waitReady(ctx, netcontroller.ReasonReady)
		vmis = stormVMIs(ctx, f.Namespace(ctx), 40)
		DeferCleanup(resetToPodNetwork)
	})

	// Faults caught: admission that depends on leading (the network observation only on the
	// leader: the follower refuses every feasible migration as networkReady), a webhook that
	// hangs past timeoutSeconds, fail-opens while a replica is up.
	It("answers every request right, from leader and follower, while the leader is SIGKILLed", func(ctx context.Context) {
		before := storm(ctx, vmis, 200, func() {})
		Expect(before.wrong).To(BeEmpty(), "both replicas up, no disruption: %s", before)
		Expect(before.failedOpen).To(BeZero(), "both replicas up, nothing may pass unjudged")

		leader := f.Leader()
		Expect(leader).NotTo(BeNil(), "a replica leads")
		var killedAt time.Time
		fig := storm(ctx, vmis, 500, func() {
			killedAt = time.Now()
			leader.Kill()
			Expect(leader.Start(ctx)).To(Succeed())
		})
		AddReportEntry("chaos: leader killed", fig.String())
		GinkgoWriter.Printf("chaos: leader %s killed mid-storm: %s\n", leader.Name, fig)
		Expect(fig.wrong).To(BeEmpty())
		Expect(fig.admitted).To(BeNumerically(">", 0))
		Expect(fig.refused).To(BeNumerically(">", 0))
		Expect(fig.max).To(BeNumerically("<", hungCreate), "no create hangs")
		for _, at := range fig.openAt {
			// Only requests the killed replica held can pass unjudged: sent before the kill, or
			// in the moment before the Service noticed.
			Expect(at).To(BeTemporally("<", killedAt.Add(3*time.Second)), "a migration failed open long after the kill")
		}
	})

	// Faults caught: a replica that never recovers from a lost watch or a lost lease, verdicts
	// from a cache emptied by a relist.
	It("recovers every replica when kube-apiserver restarts mid-storm, with no wrong verdict", func(ctx context.Context) {
		fig := storm(ctx, vmis, 500, func() {
			from := time.Now()
			Expect(f.RestartAPIServer(ctx)).To(Succeed())
			// A restarted kube-apiserver answers 403 for a moment while its RBAC authorizer's
			// informers sync (seen: the lease renewal); not a missing permission.
			f.ExpectRefusedDuring(from, time.Now().Add(5*time.Second))
		})
		restarted := waitAllReady(ctx)
		after := storm(ctx, vmis, 200, func() {})
		AddReportEntry("chaos: kube-apiserver restarted", fmt.Sprintf("%s; %d replicas exited and were restarted; after: %s", fig, restarted, after))
		GinkgoWriter.Printf("chaos: kube-apiserver restarted: %s; %d replicas restarted; after: %s\n", fig, restarted, after)
		Expect(fig.wrong).To(BeEmpty())
		Expect(after.wrong).To(BeEmpty())
		Expect(after.failedOpen).To(BeZero())
		Expect(after.refused).To(BeNumerically(">", 0))
		waitReady(ctx, netcontroller.ReasonReady)
	})

	// Faults caught: a rolling restart that closes a replica's listener while the Service still
	// sends it connections (failed handshakes, fail-opens), a re-apply that conflicts with what
	// migranet wrote or resets the certificate or the CA bundle.
	It("keeps every verdict through re-applied manifests and a rolling restart of the replicas", func(ctx context.Context) {
		secretRV, bundle := certState(ctx)
		fig := storm(ctx, vmis, 500, func() {
			for range 2 {
				Expect(f.Reinstall(ctx)).To(Succeed(), "kubectl apply --server-side of the manifests against the running install")
			}
			for _, r := range f.Replicas { // the Deployment's rolling update: one at a time
				r.Stop()
				Expect(r.Start(ctx)).To(Succeed())
			}
		})
		AddReportEntry("chaos: re-apply + rolling restart", fig.String())
		GinkgoWriter.Printf("chaos: manifests re-applied twice, replicas rolled: %s\n", fig)
		Expect(fig.wrong).To(BeEmpty())
		Expect(fig.failedOpen).To(BeZero(), "a drained replica loses no admission")
		Expect(fig.unavailable).To(BeZero())
		rv, b := certState(ctx)
		Expect(rv).To(Equal(secretRV), "the re-apply changed the certificate Secret")
		Expect(b).To(Equal(bundle), "the re-apply changed the webhooks' CA bundle")
	})

	// The outage table of docs/settings-and-admission.md ("While migranet is down"). Faults caught: a webhook scoped
	// wider than what migranet owns (foreign NADs undeletable), the in-force policy failing closed
	// while a restarted kube-apiserver cannot resolve its parameter kind, a fail-closed migration webhook or
	// NAD webhook (the network's owner held up), a Setting left unprotected, the NAD in force left
	// deletable.
	It("with every replica gone, blocks only what migranet owns", func(ctx context.Context) {
		ns := f.Namespace(ctx)
		active := expectedNAD(net24)
		foreign := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm-network"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"vms-br"}`}}
		handMade := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: "hand-made"},
			Spec: foreign.Spec}
		for _, n := range []*nadv1.NetworkAttachmentDefinition{foreign, handMade} {
			Expect(f.Client.Create(ctx, n)).To(Succeed())
		}
		feasible := vmis[0]
		vmim := framework.VMIM(feasible.Namespace, "while-down", feasible.Name, nil)

		f.StopReplicas()
		DeferCleanup(func(ctx context.Context) {
			Expect(f.StartReplicas(ctx)).To(Succeed())
			Expect(f.Manager.WaitWebhooksRegistered(ctx, f.Client)).To(Succeed())
		})
		Eventually(f.Service.Ready).Should(BeEmpty())

		By("foreign NADs delete normally, also right after a kube-apiserver restart")
		// A kube-apiserver that just started cannot resolve the in-force policy's parameter kind
		// (the KubeVirt CRD) for about 30 s: with failurePolicy Fail it refused every NAD delete of
		// the KubeVirt namespace meanwhile (seen in CI: "failed to configure policy: failed to find
		// resource referenced by paramKind").
		Expect(f.RestartAPIServer(ctx)).To(Succeed())
		Expect(f.Client.Delete(ctx, foreign)).To(Succeed())
		Expect(f.Client.Delete(ctx, handMade)).To(Succeed())
		By("migrations start and cancel as without migranet (failurePolicy Ignore)")
		Expect(f.Client.Create(ctx, vmim)).To(Succeed())
		Expect(f.Client.Delete(ctx, vmim)).To(Succeed())
		By("a migration's target pod is created as KubeVirt made it (steer.migranet.io, failurePolicy Ignore)")
		target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: feasible.Namespace, GenerateName: "virt-launcher-" + feasible.Name + "-",
			Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "while-down"},
			Annotations: map[string]string{kubevirtv1.DomainAnnotation: feasible.Name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "none"}}}}
		Expect(f.Client.Create(ctx, target, client.DryRunAll)).To(Succeed())
		Expect(target.Spec.Affinity).To(BeNil(), "unchanged")
		By("the setting cannot change unchecked (failurePolicy Fail), and the error names migranet")
		s := setting(ctx)
		s.Value = net25
		err := f.Client.Update(ctx, s)
		Expect(err).To(MatchError(ContainSubstring("settings.migranet.io")))
		Expect(storedValue(ctx)).To(Equal(net24))
		By("the NAD in force cannot be deleted: the API server's own policy refuses it (issue 52), once it resolved its parameter")
		inForce := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.KubeVirtNamespace, Name: active}}
		Eventually(func() error { return f.Client.Delete(ctx, inForce, client.DryRunAll) }).WithContext(ctx).WithTimeout(2*framework.Long).
			Should(Satisfy(apierrors.IsForbidden), "the policy judges again after its parameter kind resolved")
		err = f.Client.Delete(ctx, inForce)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting the NAD in force with migranet down: %v", err)
		Expect(err.Error()).To(ContainSubstring("migranet-migration-network-in-force"))
		Expect(managedNADs(ctx)).To(ConsistOf(active))
	})
})

// certState is the certificate Secret's resourceVersion and the CA bundle every webhook carries
// (they must all carry the same).
func certState(ctx context.Context) (string, []byte) {
	secret := &corev1.Secret{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.CertSecret}, secret)).To(Succeed())
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKey{Name: env.WebhookConfig}, cfg)).To(Succeed())
	var bundles [][]byte
	for _, w := range cfg.Webhooks {
		if !slices.ContainsFunc(bundles, func(b []byte) bool { return string(b) == string(w.ClientConfig.CABundle) }) {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
	}
	ExpectWithOffset(1, bundles).To(HaveLen(1), "every webhook carries the same bundle")
	ExpectWithOffset(1, bundles[0]).NotTo(BeEmpty())
	return secret.ResourceVersion, bundles[0]
}
