package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/env"
)

// Framework is a suite's environment (RunSuite starts it). With Suite.ControlPlane only its
// cluster is set.
type Framework struct {
	*env.Env
	refusals refusals
}

// Namespace creates a namespace for the current test and deletes it afterwards. Its migrations
// are deleted first and at once: a migration left in flight would block the next test's changes
// to the migration network while the namespace controller works.
func (f *Framework) Namespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	Expect(f.Client.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		// Each try deletes what is left: KubeVirt's evacuation controller can create a migration
		// after a first list (CI: a drain's evacuation admitted once a path healed, during this
		// cleanup). virt-controller holds each migration with a finalizer until it failed or ended.
		Eventually(func(g Gomega) {
			left := &kubevirtv1.VirtualMachineInstanceMigrationList{}
			g.Expect(f.Client.List(ctx, left, client.InNamespace(ns.Name))).To(Succeed())
			for i := range left.Items {
				vmim := &left.Items[i]
				if vmim.DeletionTimestamp != nil {
					continue
				}
				if vmim.Annotations == nil {
					vmim.Annotations = map[string]string{}
				}
				vmim.Annotations["migranet.io/force-cancel"] = "true"
				_ = f.Client.Update(ctx, vmim)
				g.Expect(client.IgnoreNotFound(f.Client.Delete(ctx, vmim))).To(Succeed())
			}
			g.Expect(left.Items).To(BeEmpty(), "migrations still finalizing")
		}).WithContext(ctx).WithTimeout(Long).Should(Succeed())
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// Kubectl runs the real kubectl against the environment, as a user would, and returns its
// stdout and stderr.
func (f *Framework) Kubectl(stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(f.Binaries.Kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// Timeouts of the wait helpers.
const (
	Short = 10 * time.Second
	Long  = 60 * time.Second
)

// DeleteNodes deletes nodes and the pods bound to them, as the pod garbage collector would after
// its quarantine: left alone, an orphaned virt-handler pod stalls the DaemonSet's rolling update
// for a minute.
func (f *Framework) DeleteNodes(ctx context.Context, names ...string) {
	for _, n := range names {
		Expect(client.IgnoreNotFound(f.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		pods := &corev1.PodList{}
		Expect(f.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": n})).To(Succeed())
		for i := range pods.Items {
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
		}
	}
}

// StartVMI creates vmi and waits until it runs on a node, and returns it as stored. With KubeVirt,
// virt-controller created its virt-launcher pod, the scheduler placed it, kwok ran it and the
// virt-handler stand-in reported the domain running.
func (f *Framework) StartVMI(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) *kubevirtv1.VirtualMachineInstance {
	ExpectWithOffset(1, f.Client.Create(ctx, vmi)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)).To(Succeed())
		if vmi.IsFinal() {
			StopTrying(f.describeEndedVMI(ctx, vmi)).Now()
		}
		g.Expect(vmi.Status.Phase).To(Equal(kubevirtv1.Running), "VMI %s/%s phase", vmi.Namespace, vmi.Name)
		g.Expect(vmi.Status.NodeName).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(Long).Should(Succeed())
	return vmi
}

// describeEndedVMI says why a VMI that was to start ended: its conditions, its launcher pods'
// phases and conditions, and the events of the namespace.
func (f *Framework) describeEndedVMI(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VMI %s/%s ended %s before running (reason %q, node %q, labels %v); conditions %+v", vmi.Namespace, vmi.Name,
		vmi.Status.Phase, vmi.Status.Reason, vmi.Status.NodeName, vmi.Labels, vmi.Status.Conditions)
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "; pod %s on %q: %s deleting=%t conditions %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, p.Status.Conditions)
		}
	}
	events := &corev1.EventList{}
	if err := f.Client.List(ctx, events, client.InNamespace(vmi.Namespace)); err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "; event %s %s/%s %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// CreateVMIM creates a migration, retrying while migranet refuses it only because its cache has
// not yet seen a VMI created moments before (admission reads informer caches, which lag the API
// server by milliseconds).
func (f *Framework) CreateVMIM(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration) {
	EventuallyWithOffset(1, func() error {
		err := f.Client.Create(ctx, vmim.DeepCopy())
		if err != nil && !strings.Contains(err.Error(), "not found: create the VMI first") {
			StopTrying("create refused for another reason").Wrap(err).Now()
		}
		return err
	}).WithTimeout(Short).Should(Succeed())
	ExpectWithOffset(1, f.Client.Get(ctx, client.ObjectKeyFromObject(vmim), vmim)).To(Succeed())
}

// RefusedByEveryReplica waits until a server-side dry run of the object yaml (kubectl create) is
// refused with a message containing want three times in a row: each replica judges from its own
// cache, and the Service picks one per request.
func (f *Framework) RefusedByEveryReplica(yaml, want string) {
	refusals := 0
	EventuallyWithOffset(1, func() int {
		_, stderr, err := f.Kubectl(yaml, "create", "--dry-run=server", "-f", "-")
		if err != nil && strings.Contains(stderr, want) {
			refusals++
		} else {
			refusals = 0
		}
		return refusals
	}).WithTimeout(Long).Should(BeNumerically(">=", 3))
}

// WaitPathsProven waits, when the nodes have real networks (and so the real probe agents run),
// until the setting's Healthy condition is True: every pair of attached nodes proven by a round
// begun after both joined the current network. Until then admission adds pathHealthy's
// "unverified" warning to every migration; specs that expect none wait here after Ready.
func (f *Framework) WaitPathsProven(ctx context.Context) {
	if f.NodeNetworks == nil {
		return
	}
	EventuallyWithOffset(2, f.SettingCondition).WithContext(ctx).WithArguments(v1beta1.ConditionHealthy).
		WithTimeout(Long).Should(HavePrefix("True/"), func() string { return f.describePaths(ctx) })
}

// describePaths is what a failed wait for Healthy shows: the condition, status.paths and each
// PathReport (a clean-clone CI run once stayed PathsUnverified and said no more).
func (f *Framework) describePaths(ctx context.Context) string {
	var b strings.Builder
	s := &v1beta1.Setting{}
	if err := f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err == nil {
		if c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionHealthy); c != nil {
			fmt.Fprintf(&b, "Healthy: %s/%s: %s\n", c.Status, c.Reason, c.Message)
		}
		if s.Status.Paths != nil {
			raw, _ := json.Marshal(s.Status.Paths)
			fmt.Fprintf(&b, "status.paths: %s\n", raw)
		}
	}
	reports := &v1beta1.PathReportList{}
	if err := f.Client.List(ctx, reports); err != nil {
		return b.String() + "PathReports: " + err.Error()
	}
	for _, r := range reports.Items {
		r.ManagedFields = nil
		raw, _ := json.Marshal(r)
		fmt.Fprintf(&b, "PathReport %s\n", raw)
	}
	return b.String()
}

// SettingCondition returns "<status>/<reason>" of condition typ of the vm-migration-network
// Setting, "absent" when it has none, "stale" while it describes an older generation, or the
// read error's text.
func (f *Framework) SettingCondition(ctx context.Context, typ string) string {
	s := &v1beta1.Setting{}
	if err := f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(s.Status.Conditions, typ)
	switch {
	case c == nil:
		return "absent"
	case c.ObservedGeneration != s.Generation:
		return "stale"
	}
	return string(c.Status) + "/" + c.Reason
}
