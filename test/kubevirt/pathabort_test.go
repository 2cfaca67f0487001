package kubevirt

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/sim"
)

// abortBound is how long after the break the abort may come: the round in progress at the break
// may miss it, so the next round (interval 4 s, a round under a second here) reports it, then the
// report's write, the path observer's rebuild and the path-abort controller's delete (the grace).
const abortBound = 2*4*time.Second + 5*time.Second

// jumbo is a migration network of MTU 9000 (the nodes' uplinks are 9000 by default here).
const jumbo = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

// streamHeld starts the held migration "m" of vmi "vm" (source) to target and waits until it
// streams; the stand-in keeps it streaming whatever its path does until it is aborted.
func streamHeld(ctx context.Context, ns, target string, annotations ...string) {
	GinkgoHelper()
	ann := sim.HandlerHoldAnnotation + `: "true"`
	for _, a := range annotations {
		ann += ", " + a
	}
	yaml := fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata:\n  name: m\n  namespace: %s\n  annotations: {%s}\n"+
		"spec: {vmiName: vm, addedNodeSelector: {%s: %s}}\n", ns, ann, corev1.LabelHostname, target)
	createWarned(yaml)
	Eventually(func(g Gomega) {
		ms := vmi(ctx, ns, "vm").Status.MigrationState
		g.Expect(ms).NotTo(BeNil())
		g.Expect(ms.StartTimestamp).NotTo(BeNil(), "streaming")
		g.Expect(ms.TargetNodeDomainDetected).To(BeTrue())
	}).WithTimeout(framework.Long).Should(Succeed())
}

// narrow sets node's uplink to mtu and registers the repair.
func narrow(ctx context.Context, node string, mtu int) {
	key := cluster.UplinkMTUAnnotationPrefix + cluster.DefaultClusterNetwork
	patchNode(ctx, node, func(n *corev1.Node) { n.Annotations[key] = strconv.Itoa(mtu) },
		func(n *corev1.Node) { n.Annotations[key] = strconv.Itoa(cluster.DefaultUplinkMTU) })
}

// gone reports whether the migration is deleted or being deleted (an abort in progress).
func gone(ctx context.Context, ns, name string) bool {
	m := &kubevirtv1.VirtualMachineInstanceMigration{}
	err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)
	return client.IgnoreNotFound(err) == nil && (err != nil || m.DeletionTimestamp != nil)
}

// pathEvents lists the Warning events of reason in ns, "kind/name: message" each.
func pathEvents(ctx context.Context, ns, reason string) []string {
	list := &corev1.EventList{}
	Expect(f.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return out
}

// statusOf runs `migranet status -n ns name` and returns its output.
func statusOf(ctx context.Context, ns, name string) string {
	cmd := exec.CommandContext(ctx, f.Manager.Binary, "status", "--kubeconfig", f.Kubeconfig, "-n", ns, name)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	ExpectWithOffset(1, cmd.Run()).To(Succeed(), errOut.String())
	return out.String()
}

// A migration already streaming when its path breaks, with KubeVirt's own virt-controller: the
// stand-in holds it streaming (it would otherwise end it at once on the narrowed path), the probe
// agents see the break, and migranet deletes the migration as `virtctl migrate-cancel` does;
// virt-controller then asks the source to abort.
//
// Faults injected, each seen to fail a spec here: the controller recording the abort but not
// deleting the VMIM (the first: not gone within the bound); DecideAbort ignoring the mode (warn
// aborts: the second, no MigrationPathFailing event); DecideAbort judging post-copy like pre-copy
// (the second: migranet's postCopyCancel refuses the delete, so the audit log's delete request of
// the manager is what fails it); DecideAbort trusting any reported fault, stale or from before the
// start (the third: the migration is aborted as it starts, so it never streams).
var _ = Describe("a streaming migration whose path breaks", func() {
	BeforeEach(func() {
		// Never hides a defect in CI: see pathfailure_test.go's uplink spec.
		if f.NodeNetworks == nil {
			Skip("the probe agents need the nodes' real networks (MIGRANET_TEST_SKIP=netns)")
		}
		DeferCleanup(resetSettings)
	})

	It("is aborted within a probe round plus a grace, leaves the VMI running on its source, and says why on the migration, its VMI and in migranet status", func(ctx context.Context) {
		ns, source, target := vmOnNetwork(ctx, jumbo)
		streamHeld(ctx, ns, target)
		By("a round with a healthy path after the start aborts nothing")
		Consistently(gone).WithContext(ctx).WithArguments(ns, "m").WithTimeout(5 * time.Second).Should(BeFalse())

		By("narrowing the target's uplink below the network's MTU mid-stream")
		broke := time.Now()
		narrow(ctx, target, 1500)
		Eventually(gone).WithContext(ctx).WithArguments(ns, "m").WithPolling(200 * time.Millisecond).
			WithTimeout(abortBound).Should(BeTrue())
		took := time.Since(broke)
		AddReportEntry("abort after the break", took.Round(100*time.Millisecond).String())
		GinkgoWriter.Printf("aborted %.1f s after the break (bound %s)\n", took.Seconds(), abortBound)

		Eventually(func(g Gomega) {
			ms := vmi(ctx, ns, "vm").Status.MigrationState
			g.Expect(ms.AbortRequested).To(BeTrue())
			g.Expect(ms.AbortStatus).To(Equal(kubevirtv1.MigrationAbortSucceeded))
		}).WithTimeout(framework.Long).Should(Succeed())
		after := vmi(ctx, ns, "vm")
		Expect(after.Status.NodeName).To(Equal(source), "an aborted migration leaves the VMI on its source")
		Expect(after.Status.Phase).To(Equal(kubevirtv1.Running))

		pair := fmt.Sprintf("migration path %s -> %s failed while the migration streamed: 9000-byte frames from %s to %s do not arrive", source, target, source, target)
		Eventually(pathEvents).WithContext(ctx).WithArguments(ns, health.ReasonMigrationPathBroken).WithTimeout(framework.Short).Should(ConsistOf(
			And(HavePrefix("VirtualMachineInstanceMigration/m: "), ContainSubstring(pair)),
			And(HavePrefix("VirtualMachineInstance/vm: "), ContainSubstring(pair))))
		Eventually(func() error {
			return f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m"}, &kubevirtv1.VirtualMachineInstanceMigration{})
		}).
			WithContext(ctx).WithTimeout(framework.Long).Should(Satisfy(func(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }))
		out := statusOf(ctx, ns, "m")
		Expect(out).To(And(
			HavePrefix(fmt.Sprintf("migration %s/m of VMI vm: aborted by migranet: its path failed while it streamed", ns)),
			ContainSubstring(fmt.Sprintf("from %s to %s over", source, target)),
			ContainSubstring(pair),
			ContainSubstring("the VMI stays on "+source)), out)
	})

	// Issue 53: warn means warn. An admin lets a migration try a path the probes distrust (rule
	// pathHealthy at warn; a host firewall drops the probes but passes the stream): the failure
	// was known before the migration started, so runningPathHealthy (enforce) leaves it to finish.
	// Fault caught, seen to fail this spec once: DecideAbort counting a failure by the fresh round
	// that finds it again instead of the probe that first found it (the migration is aborted a
	// round after it starts: MigrationAbortedPathBroken, the VMI stays on its source).
	It("lets a migration admitted over a path failing before it started stream to the end (warn means warn)", func(ctx context.Context) {
		ns, source, target := vmOnNetwork(ctx, jumbo)
		warnOnly("pathHealthy")
		src := &v1beta1.PathReport{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: source}, src)).To(Succeed())
		addr, err := netip.ParseAddr(src.Address)
		Expect(err).NotTo(HaveOccurred(), "the source's report names its migration0 address")
		By("a firewall on the target's host drops the probes from the source, not the stream")
		host := f.NodeNetworks.Fabric.Host(target)
		Expect(nodenet.DropProbesBridged(ctx, host, addr, int(src.Port))).To(Succeed())
		DeferCleanup(nodenet.UndropBridged, host)
		Eventually(func(g Gomega) []v1beta1.PeerPath {
			r := &v1beta1.PathReport{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: source}, r)).To(Succeed())
			return r.Failing
		}).WithContext(ctx).WithTimeout(framework.Long).Should(ContainElement(HaveField("Node", target)), "the source's report lists the pair")

		By("the migration, admitted with pathHealthy's warning, streams 128 MiB at 16 MiB/s (8 s: two probe rounds)")
		yaml := fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata:\n  name: w\n  namespace: %s\n  annotations: {%s: 16Mi, %s: \"0\"}\n"+
			"spec: {vmiName: vm, addedNodeSelector: {%s: %s}}\n", ns, sim.HandlerBandwidthAnnotation, sim.HandlerDirtyRateAnnotation, corev1.LabelHostname, target)
		Expect(createWarned(yaml)).To(ContainSubstring("Warning: migranet pathHealthy"))
		Eventually(migrationPhase).WithContext(ctx).WithArguments(ns, "w").WithTimeout(framework.Long).Should(Equal(string(kubevirtv1.MigrationSucceeded)))
		after := vmi(ctx, ns, "vm")
		Expect(after.Status.NodeName).To(Equal(target), "the VM moved")
		ms := after.Status.MigrationState
		Expect(ms.EndTimestamp.Sub(ms.StartTimestamp.Time)).To(BeNumerically(">=", 2*4*time.Second), "it streamed across two probe rounds")

		By("fresh rounds saw the pair failing while it streamed, since before it started; nothing aborted or warned")
		r := &v1beta1.PathReport{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: source}, r)).To(Succeed())
		Expect(r.LastRound.Started.Time).To(BeTemporally(">", ms.StartTimestamp.Time), "a round after the start")
		Expect(r.Failing).To(ContainElement(And(HaveField("Node", target), HaveField("Since.Time", BeTemporally("<", ms.StartTimestamp.Time)))))
		Expect(pathEvents(ctx, ns, health.ReasonMigrationPathBroken)).To(BeEmpty())
		Expect(pathEvents(ctx, ns, health.ReasonMigrationPathFailing)).To(BeEmpty())
		Expect(statusOf(ctx, ns, "w")).To(And(ContainSubstring("succeeded in"), Not(ContainSubstring("aborted"))))
	})

	It("at warn only warns; in post-copy is never aborted", func(ctx context.Context) {
		overPlainTCP()
		ns, _, target := vmOnNetwork(ctx, jumbo)
		f.SetSetting(ctx, v1beta1.MigrationPolicy, `{"rules":{"runningPathHealthy":"warn"}}`)
		streamHeld(ctx, ns, target)
		narrow(ctx, target, 1500)
		Eventually(pathEvents).WithContext(ctx).WithArguments(ns, health.ReasonMigrationPathFailing).WithTimeout(abortBound).
			Should(ContainElement(And(HavePrefix("VirtualMachineInstanceMigration/m: "), ContainSubstring("not aborted (rule runningPathHealthy is warn)"))))
		Expect(gone(ctx, ns, "m")).To(BeFalse(), "warn aborts nothing")
		Expect(vmi(ctx, ns, "vm").Status.MigrationState.AbortRequested).To(BeFalse())
		_, stderr, err := f.Kubectl("", "delete", "vmim", "-n", ns, "m", "--wait=true")
		Expect(err).NotTo(HaveOccurred(), stderr)

		By("post-copy at enforce, over the same narrowed path (admitted: pathHealthy only warns)")
		f.SetSetting(ctx, v1beta1.MigrationPolicy, `{"rules":{"pathHealthy":"warn"}}`)
		Eventually(func() bool { return vmi(ctx, ns, "vm").Status.MigrationState.Failed }).WithTimeout(framework.Long).Should(BeTrue())
		Eventually(func() error {
			// The aborted migration's target pod must be gone before another starts.
			_, stderr, err := f.Kubectl(fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata:\n  name: pc\n  namespace: %s\n"+
				"  annotations: {%s: \"true\", %s: PostCopy}\nspec: {vmiName: vm, addedNodeSelector: {%s: %s}}\n",
				ns, sim.HandlerHoldAnnotation, sim.HandlerModeAnnotation, corev1.LabelHostname, target), "create", "-f", "-")
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		}).WithTimeout(framework.Long).Should(Succeed())
		Eventually(func(g Gomega) {
			ms := vmi(ctx, ns, "vm").Status.MigrationState
			g.Expect(ms.MigrationUID).To(Equal(migration(ctx, ns, "pc").UID))
			g.Expect(ms.Mode).To(Equal(kubevirtv1.MigrationPostCopy))
		}).WithTimeout(framework.Long).Should(Succeed())
		Consistently(gone).WithContext(ctx).WithArguments(ns, "pc").WithTimeout(abortBound).Should(BeFalse(), "post-copy is never aborted")
		Expect(pathEvents(ctx, ns, health.ReasonMigrationPathBroken)).To(BeEmpty())
		// migranet's own postCopyCancel would refuse the delete anyway: the path-abort controller
		// must not even ask (the audit log holds every request of the manager's).
		events, err := framework.ReadAudit(f.AuditLog(), env.ManagerUser)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range events {
			if e.ObjectRef != nil && e.ObjectRef.Resource == "virtualmachineinstancemigrations" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == "pc" {
				Expect(e.Verb).NotTo(BeElementOf("delete", "patch"), "migranet asked to abort the post-copy migration: %s", e)
			}
		}
	})

	// The stream crosses the patched proxy pair, whose TLS handshake does not pass a path narrowed
	// below the network's MTU (as on a real cluster): the path is repaired, unseen by the held
	// agents, before the migration starts, and broken again while it streams. Issue 53: the agents
	// come back as new processes after their reports went stale, so their first round's failure
	// has no known beginning and aborts nothing; once they saw the path pass, a new break does.
	// Faults caught: stale results counted (aborted while the agents are down); a failure found
	// by a restarted agent's first round counted as new (aborted as soon as they are back).
	It("aborts nothing on stale results nor on a restarted agent's first look, and aborts a break seen after the path passed", func(ctx context.Context) {
		ns, source, target := vmOnNetwork(ctx, jumbo)
		key := cluster.UplinkMTUAnnotationPrefix + cluster.DefaultClusterNetwork
		setUplink := func(mtu int) func(*corev1.Node) {
			return func(n *corev1.Node) { n.Annotations[key] = strconv.Itoa(mtu) }
		}
		sourceLists := func(g Gomega) *v1beta1.PeerPath {
			r := &v1beta1.PathReport{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: source}, r)).To(Succeed())
			for i := range r.Failing {
				if r.Failing[i].Node == target {
					return &r.Failing[i]
				}
			}
			return nil
		}
		patchNode(ctx, target, setUplink(1500), setUplink(cluster.DefaultUplinkMTU))
		Eventually(sourceLists).WithContext(ctx).WithTimeout(framework.Long).ShouldNot(BeNil(), "the source's own report lists the pair")
		By("both nodes' probe agents down until their failing results are stale: the nodes are AgentSilent")
		for _, n := range []string{source, target} {
			Expect(f.ProbeAgents.Hold(ctx, n, true)).To(Succeed())
			DeferCleanup(f.ProbeAgents.Hold, n, false)
		}
		Eventually(networkCondition).WithContext(ctx).WithArguments(v1beta1.ConditionHealthy).
			WithTimeout(framework.Long).Should(HavePrefix("False/"+health.ReasonAgentSilent), "silent, and no path failing on their old results")
		By("the path repaired (the held agents do not see it), the migration streams: stale results abort nothing")
		patchNode(ctx, target, setUplink(cluster.DefaultUplinkMTU), setUplink(cluster.DefaultUplinkMTU))
		streamHeld(ctx, ns, target)
		Consistently(gone).WithContext(ctx).WithArguments(ns, "m").WithTimeout(abortBound).Should(BeFalse(), "stale results abort nothing")
		started := vmi(ctx, ns, "vm").Status.MigrationState.StartTimestamp.Time

		By("the path breaks again and the agents come back as new processes: their first look finds it failing, with no known beginning")
		patchNode(ctx, target, setUplink(1500), setUplink(cluster.DefaultUplinkMTU))
		for _, n := range []string{source, target} {
			Expect(f.ProbeAgents.Hold(ctx, n, false)).To(Succeed())
		}
		Eventually(sourceLists).WithContext(ctx).WithTimeout(framework.Long).Should(HaveField("Since.Time", BeTemporally(">", started)), "a fresh report lists the pair again")
		Consistently(gone).WithContext(ctx).WithArguments(ns, "m").WithTimeout(abortBound).Should(BeFalse(), "a restarted agent's first look dates nothing")

		By("the path passes a round, then breaks while the migration streams: aborted")
		patchNode(ctx, target, setUplink(cluster.DefaultUplinkMTU), setUplink(cluster.DefaultUplinkMTU))
		Eventually(sourceLists).WithContext(ctx).WithTimeout(framework.Long).Should(BeNil(), "the source's report no longer lists the pair")
		broke := time.Now()
		patchNode(ctx, target, setUplink(1500), setUplink(cluster.DefaultUplinkMTU))
		Eventually(gone).WithContext(ctx).WithArguments(ns, "m").WithTimeout(abortBound).Should(BeTrue(), func() string {
			// What the source's report said at the timeout: whether the break was found, and dated.
			r := &v1beta1.PathReport{}
			err := f.Client.Get(ctx, client.ObjectKey{Name: source}, r)
			return fmt.Sprintf("%.1f s after the break, the source's report (read: %v): last round %+v, failing %+v; agents restarted by their liveness probe: source %d (%s), target %d (%s)",
				time.Since(broke).Seconds(), err, r.LastRound, r.Failing, f.ProbeAgents.Restarts(source), f.ProbeAgents.RestartReason(source),
				f.ProbeAgents.Restarts(target), f.ProbeAgents.RestartReason(target))
		})
		GinkgoWriter.Printf("a break after a passing round aborted %.1f s after it (bound %s)\n", time.Since(broke).Seconds(), abortBound)
		Eventually(pathEvents).WithContext(ctx).WithArguments(ns, health.ReasonMigrationPathBroken).WithTimeout(framework.Short).
			Should(ContainElement(HavePrefix("VirtualMachineInstanceMigration/m: ")))
	})
})
