package rolling

import (
	"context"
	"fmt"
	"os"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
	"github.com/migranet/migranet/test/upgrade"
)

// readmeValue is the README's first setting.
const readmeValue = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

// state is what an upgrade must leave as it was: the setting and its Ready condition, the NAD
// in force, the KubeVirt CR's spec (a change there restarts every virt-handler), the
// virt-handler pods and the PathReports.
type state struct {
	setting        types.UID
	readySince     string
	nad            string
	nadUID         types.UID
	nadConfig      string
	kubevirtGen    int64
	migrationNet   string
	virtHandlers   map[string]types.UID // node → pod
	pathReports    map[string]types.UID // node → report
	managedNADs    []string
	guardParamsRev string
}

func readState(ctx context.Context) state {
	GinkgoHelper()
	var st state
	s := &v1beta1.Setting{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
	st.setting = s.UID
	if c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady); c != nil {
		st.readySince = string(c.Status) + "/" + c.Reason + " since " + c.LastTransitionTime.UTC().String()
	}
	kv, err := f.KubeVirt(ctx)
	Expect(err).NotTo(HaveOccurred())
	st.kubevirtGen, st.migrationNet = kv.Generation, settings.MigrationNetworkOf(kv)
	nad := &nadv1.NetworkAttachmentDefinition{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: st.migrationNet}, nad)).To(Succeed())
	st.nad, st.nadUID, st.nadConfig = nad.Name, nad.UID, nad.Spec.Config
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	Expect(f.Client.List(ctx, nads, client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy})).To(Succeed())
	for _, n := range nads.Items {
		st.managedNADs = append(st.managedNADs, n.Namespace+"/"+n.Name)
	}
	pods := &corev1.PodList{}
	Expect(f.Client.List(ctx, pods, client.InNamespace(cluster.KubeVirtNamespace), client.MatchingLabels{sim.VirtHandlerLabel: sim.VirtHandlerName})).To(Succeed())
	st.virtHandlers = map[string]types.UID{}
	for _, p := range pods.Items {
		st.virtHandlers[p.Spec.NodeName] = p.UID
	}
	reports := &v1beta1.PathReportList{}
	Expect(f.Client.List(ctx, reports)).To(Succeed())
	st.pathReports = map[string]types.UID{}
	for _, r := range reports.Items {
		st.pathReports[r.Name] = r.UID
	}
	cm := &corev1.ConfigMap{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "migranet-migration-networks"}, cm)).To(Succeed())
	st.guardParamsRev = cm.Data["names"]
	return st
}

// agentsRolled checks that the probe DaemonSet runs image on every node, its pods Ready, and
// every PathReport written by an agent of version.
func agentsRolled(ctx context.Context, g Gomega, image, version string) {
	ds := &appsv1.DaemonSet{}
	g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: "migranet-probe", Name: "migranet-probe"}, ds)).To(Succeed())
	g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Generation))
	g.Expect(ds.Status.DesiredNumberScheduled).To(BeNumerically(">", 0))
	g.Expect(ds.Status.UpdatedNumberScheduled).To(Equal(ds.Status.DesiredNumberScheduled))
	g.Expect(ds.Status.NumberAvailable).To(Equal(ds.Status.DesiredNumberScheduled))
	pods := &corev1.PodList{}
	g.Expect(f.Client.List(ctx, pods, client.InNamespace("migranet-probe"), client.MatchingLabels{sim.ProbeAgentLabel: sim.ProbeAgentValue})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(int(ds.Status.DesiredNumberScheduled)))
	for _, p := range pods.Items {
		g.Expect(p.Spec.Containers[0].Image).To(Equal(image), "pod %s", p.Name)
	}
	reports := &v1beta1.PathReportList{}
	g.Expect(f.Client.List(ctx, reports)).To(Succeed())
	g.Expect(reports.Items).NotTo(BeEmpty())
	for _, r := range reports.Items {
		// The agent reports the version with its commit appended (cmd/migranet version()).
		g.Expect(r.AgentVersion).To(HavePrefix(version), "PathReport %s", r.Name)
	}
}

// roll replaces the running release by to: its manifests applied, then each manager replica
// replaced as the Deployment's rollout does (the new pod Ready and routed before the old one
// stops), while kube-controller-manager rolls the probe DaemonSet to the new image.
func roll(ctx context.Context, to upgrade.Build, release env.Release) {
	GinkgoHelper()
	By("applying " + to.Version + "'s manifests")
	Expect(f.Upgrade(ctx, release)).To(Succeed())
	for i, old := range f.Replicas {
		By(fmt.Sprintf("replacing replica %s by one of %s", old.Name, to.Version))
		n := f.NewReplica(to.Binary, "", fmt.Sprintf("%s-%d", to.Version, i))
		Expect(n.Start(ctx)).To(Succeed())
		old.Stop()
		f.Replicas[i] = n
		if f.Manager == old {
			f.Manager = n
		}
		log, err := os.ReadFile(n.LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(MatchRegexp(`starting manager.*"version":"%s"`, to.Version), "the replica's start-up log names its version")
	}
	By("waiting for the probe DaemonSet's rollout")
	Eventually(func(g Gomega) { agentsRolled(ctx, g, release.Image, to.Version) }).
		WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	By("waiting for Healthy=True on the new agents' rounds")
	f.WaitPathsProven(ctx)
}

var _ = Describe("a rolling upgrade from the previous release, and the downgrade back", Ordered, func() {
	var (
		ns                       string
		feasible, pinned, movers []string
		before                   state
	)

	BeforeAll(func(ctx context.Context) {
		s := &v1beta1.Setting{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)).To(Succeed())
		patch := client.MergeFrom(s.DeepCopy())
		s.Value = readmeValue
		Expect(f.Client.Patch(ctx, s, patch)).To(Succeed())
		Eventually(f.SettingCondition).WithContext(ctx).WithArguments(v1beta1.ConditionReady).
			WithTimeout(framework.Long).Should(Equal("True/" + netcontroller.ReasonReady))
		Expect(f.WaitKubeVirtAvailable(ctx, framework.Long)).To(Succeed())
		f.WaitPathsProven(ctx)

		ns = f.Namespace(ctx)
		for i := range 3 {
			feasible = append(feasible, fmt.Sprintf("free-%d", i))
			f.StartVMI(ctx, framework.VMI(ns, feasible[i], "node-1", nil))
		}
		pinned = []string{"pinned"}
		f.StartVMI(ctx, framework.VMI(ns, pinned[0], "node-1", map[string]string{corev1.LabelHostname: "node-1"}))
		movers = []string{"mover"}
		f.StartVMI(ctx, framework.VMI(ns, movers[0], "node-2", nil))
		// Every replica's cache holds the VMIs: 20 answers in a row from replicas chosen by the
		// Service admit a migration of the last one.
		Eventually(func(g Gomega) {
			for range 20 {
				g.Expect(f.Client.Create(ctx, framework.VMIM(ns, "ready", movers[0], nil), client.DryRunAll)).To(Succeed())
			}
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		before = readState(ctx)
		GinkgoWriter.Printf("before: %+v\n", before)
	}, NodeTimeout(5*time.Minute))

	// The faults these catch: a release whose manager rewrites the NAD or the KubeVirt CR (every
	// virt-handler restarts), an admission answer lost or wrong while replicas of two releases
	// serve together, a moment with the NAD unguarded or the setting unvalidated, agents of the
	// new release judging paths False while their peers still run the old one.
	check := func(ctx context.Context, label string, to upgrade.Build, release env.Release) {
		// Agents of the previous release write no virt-handler UID in their reports, so neither
		// side of this roll can resume the other's: Healthy may read Unknown until the first
		// rounds (the restart spec below holds it to True).
		w := startWatch(ctx, label, ns, before.nad, feasible, pinned, movers, false)
		began := time.Now()
		roll(ctx, to, release)
		w.past(ctx, 20)
		w.finish()
		took := time.Since(began).Round(time.Second)
		AddReportEntry(to.Version, fmt.Sprintf("%s in %s", w, took))
		GinkgoWriter.Printf("rolled to %s in %s: %s\n", to.Version, took, w)

		Expect(w.wrong).To(BeEmpty(), "wrong answers while rolling to %s", to.Version)
		Expect(w.flaps).To(BeEmpty(), "Healthy False or Ready not True while rolling to %s", to.Version)
		for what, n := range map[string]int{"feasible admitted": w.admitted, "pinned refused": w.refused,
			"real migrations": w.migrated, "guard refusals": w.guarded, "invalid values refused": w.validated} {
			Expect(n).To(BeNumerically(">", 0), "no %s counted: the watch did not run", what)
		}
		after := readState(ctx)
		Expect(after).To(Equal(before), "what the roll to %s had to leave alone", to.Version)
	}

	It("upgrades with every answer right, nothing restarted and the network Healthy throughout", func(ctx context.Context) {
		check(ctx, "up", current, env.Release{Image: currentImage})
	})

	// Issue 53: a new agent starts from its node's last report (its since and failures) until its
	// first round replaces it, so a rollout of the agents keeps Healthy at its true value. Fault
	// caught: an agent that starts from nothing (before: Healthy Unknown in 13 of about 45 readings
	// of a roll), or whose resumed since is not what its peers' rounds are judged against.
	It("restarts every probe agent of the same release (a DaemonSet rollout) with Healthy never Unknown nor False", func(ctx context.Context) {
		w := startWatch(ctx, "restart", ns, before.nad, feasible, pinned, movers, true)
		began := time.Now()
		ds := &appsv1.DaemonSet{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: "migranet-probe", Name: "migranet-probe"}, ds)).To(Succeed())
		patch := client.MergeFrom(ds.DeepCopy())
		if ds.Spec.Template.Annotations == nil {
			ds.Spec.Template.Annotations = map[string]string{}
		}
		// What kubectl rollout restart writes.
		ds.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = began.Format(time.RFC3339)
		Expect(f.Client.Patch(ctx, ds, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			agentsRolled(ctx, g, currentImage, current.Version)
			pods := &corev1.PodList{}
			g.Expect(f.Client.List(ctx, pods, client.InNamespace("migranet-probe"), client.MatchingLabels{sim.ProbeAgentLabel: sim.ProbeAgentValue})).To(Succeed())
			for _, p := range pods.Items {
				g.Expect(p.CreationTimestamp.Time).To(BeTemporally(">=", began.Truncate(time.Second)), "agent pod %s not replaced", p.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		f.WaitPathsProven(ctx)
		w.past(ctx, 20)
		w.finish()
		AddReportEntry("agents restarted", fmt.Sprintf("%s in %s", w, time.Since(began).Round(time.Second)))
		Expect(w.wrong).To(BeEmpty(), "wrong answers while the agents restarted")
		Expect(w.flaps).To(BeEmpty(), "Healthy not True or Ready not True while the agents restarted")
		Expect(w.conditions).To(HaveKey("Healthy=True/"+netcontroller.ReasonPathsVerified), "the watch read no condition")
		Expect(readState(ctx)).To(Equal(before), "what restarting the agents had to leave alone")
	})

	It("downgrades back the same way", func(ctx context.Context) {
		check(ctx, "down", previous, env.Release{Manifests: previous.Manifests, Image: previousImage})
	})
})
