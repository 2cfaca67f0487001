package kubevirt

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

// drainTimeout bounds `kubectl drain`: far below KubeVirt's default progressTimeout (150 s), so a
// migration left stalling on the broken path keeps the drain from completing.
const drainTimeout = 75 * time.Second

// startEvacuableVM starts a LiveMigrate VM whose VMI prefers node-1 (weight 100), then node-2
// (weight 50), with the template annotations given, and waits until its VMI runs on node-1.
func startEvacuableVM(ctx context.Context, ns, name string, annotations map[string]string) {
	GinkgoHelper()
	f.StartEvacuableVM(ctx, preferring(ns, name, "node-2"), "node-1", annotations)
}

// streamingTo returns the VMIs of names whose current migration streams to node.
func streamingTo(ctx context.Context, ns, node string, names []string) []string {
	var out []string
	for _, name := range names {
		ms := vmi(ctx, ns, name).Status.MigrationState
		if ms != nil && ms.TargetNode == node && ms.StartTimestamp != nil && ms.TargetNodeDomainDetected && !ms.Completed && !ms.Failed {
			out = append(out, name)
		}
	}
	return out
}

// Issue 47's drain: `kubectl drain` of a node whose three LiveMigrate VMs evacuate while the path
// to the node the scheduler first picks breaks mid-stream. migranet aborts the streaming
// migrations on the broken path (runningPathHealthy), KubeVirt's evacuation controller creates
// new migrations (v1.8.4: handleMigrationBackoff does not count a Failed migration being deleted),
// the steering keeps their target pods off the broken node, and the drain completes with every VM
// on the healthy node. The VMs prefer node-2 (the node broken mid-stream) over node-3, so without
// a break every migration would go there; each streams its 128 MiB at 16 MiB/s (8 s).
//
// Fault caught, seen to fail this spec once: runningPathHealthy off (the migrations on the broken
// path stall until KubeVirt's progressTimeout, 150 s, so the drain does not complete within
// drainTimeout and no MigrationAbortedPathBroken event is recorded). Issue 53: `migranet status`
// of each aborted migration, once its VM has moved on with the evacuation's next migration, still
// tells its stream and path (from the abort's recorded state).
var _ = Describe("a node drain while a migration path breaks mid-stream", func() {
	BeforeEach(func() {
		// Never hides a defect in CI: reachable only when MIGRANET_TEST_SKIP names netns, which
		// CI does not set; test/summary counts any skip that variable does not allow as red.
		if f.NodeNetworks == nil {
			Skip("the streams and the probe agents need the nodes' real networks (MIGRANET_TEST_SKIP=netns)")
		}
		DeferCleanup(resetSettings)
	})

	It("completes: migranet aborts the migrations streaming to the broken node, the evacuation retries, every VM lands on the healthy node", func(ctx context.Context) {
		const drained, broken, healthy = "node-1", "node-2", "node-3"
		f.SetSetting(ctx, v1beta1.MigrationNetwork, jumbo)
		waitNetworkReady(ctx, netcontroller.ReasonReady)
		Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
		ns := f.Namespace(ctx)
		// Runs before the namespace's cleanup: a drain left unfinished (a failing run) keeps the
		// VMIs marked for evacuation, and KubeVirt would create migrations while that cleanup
		// waits for them to end; with the VMs deleted their VMIs go, and so do the migrations.
		DeferCleanup(func(ctx context.Context) { f.DeleteVMs(ctx, ns) })
		names := []string{"db-0", "db-1", "db-2"}
		slow := map[string]string{sim.HandlerBandwidthAnnotation: "16Mi", sim.HandlerDirtyRateAnnotation: "0"}
		for _, name := range names {
			startEvacuableVM(ctx, ns, name, slow)
		}
		DeferCleanup(func(ctx context.Context) {
			_, _, _ = f.Kubectl("", "uncordon", drained)
		})

		By("kubectl drain " + drained + " in the background")
		type result struct {
			out, stderr string
			err         error
			took        time.Duration
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			out, stderr, err := f.Kubectl("", "drain", drained, "--pod-selector", kubevirtv1.AppLabel+"=virt-launcher",
				"--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout", drainTimeout.String())
			done <- result{out, stderr, err, time.Since(start)}
		}()

		By("narrowing " + broken + "'s uplink below 9000 as soon as a migration streams to it")
		var first []string
		Eventually(func() []string {
			first = streamingTo(ctx, ns, broken, names)
			return first
		}).WithContext(ctx).WithPolling(100 * time.Millisecond).WithTimeout(framework.Long).ShouldNot(BeEmpty())
		narrow(ctx, broken, 1500)
		GinkgoWriter.Printf("%s: %v streaming to %s; uplink narrowed\n", time.Since(start).Round(100*time.Millisecond), first, broken)

		var res result
		Eventually(done).WithContext(ctx).WithTimeout(drainTimeout + 10*time.Second).Should(Receive(&res))
		Expect(res.err).NotTo(HaveOccurred(), "drain after %s:\n%s\n%s", res.took, res.out, res.stderr)
		AddReportEntry("drain took", res.took.Round(100*time.Millisecond).String())
		GinkgoWriter.Printf("drain completed in %s\n", res.took.Round(100*time.Millisecond))

		By("every VMI Running on " + healthy + ", none left on " + drained + " or sent to " + broken)
		for _, name := range names {
			Eventually(func(g Gomega) {
				v := vmi(ctx, ns, name)
				g.Expect(v.Status.Phase).To(Equal(kubevirtv1.Running))
				g.Expect(v.Status.NodeName).To(Equal(healthy), "%s moved off %s, and not to %s", name, drained, broken)
			}).WithContext(ctx).WithTimeout(framework.Short).Should(Succeed())
		}
		pods := &corev1.PodList{}
		Expect(f.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				Expect(p.Spec.NodeName).To(Equal(healthy), "pod %s", p.Name)
			}
		}

		By("the migrations that streamed to " + broken + " were aborted by migranet, each VM's last on " + healthy)
		aborted := pathEvents(ctx, ns, health.ReasonMigrationPathBroken)
		GinkgoWriter.Printf("MigrationAbortedPathBroken events:\n  %s\n", strings.Join(aborted, "\n  "))
		Expect(aborted).To(ContainElement(And(HavePrefix("VirtualMachineInstanceMigration/"),
			ContainSubstring("migration path "+drained+" -> "+broken+" failed while the migration streamed"))))
		for _, name := range first {
			Expect(aborted).To(ContainElement(And(HavePrefix("VirtualMachineInstance/"+name+": "), ContainSubstring(drained+" -> "+broken))),
				"%s streamed to %s at the break", name, broken)
		}
		By("each aborted migration's story, told after its VM's next migration: its own, from " + drained + " to " + broken)
		events := &corev1.EventList{}
		Expect(f.Client.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"reason": health.ReasonMigrationPathBroken})).To(Succeed())
		told := 0
		for _, e := range events.Items {
			if e.InvolvedObject.Kind != "VirtualMachineInstanceMigration" {
				continue
			}
			out := statusOf(ctx, ns, e.InvolvedObject.Name)
			GinkgoWriter.Printf("migranet status -n %s %s:\n%s", ns, e.InvolvedObject.Name, out)
			Expect(out).To(And(ContainSubstring(": aborted by migranet: its path failed while it streamed"),
				ContainSubstring("from "+drained+" to "+broken+" over"),
				MatchRegexp(`(?m)^  \d\. path `+drained+` <-> `+broken+` +.*when aborted: migration path `+drained+` -> `+broken),
				ContainSubstring("the VMI stayed on "+drained+"; it has started another migration since")), out)
			told++
		}
		Expect(told).To(BeNumerically(">=", 1))

		list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
		Expect(f.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		succeeded := map[string]bool{}
		for _, m := range list.Items {
			if m.Status.Phase == kubevirtv1.MigrationSucceeded {
				Expect(m.Status.MigrationState).NotTo(BeNil())
				Expect(m.Status.MigrationState.TargetNode).To(Equal(healthy), "migration %s of %s", m.Name, m.Spec.VMIName)
				succeeded[m.Spec.VMIName] = true
			}
		}
		Expect(succeeded).To(HaveLen(len(names)), "one Succeeded migration per VM")
	})
})
