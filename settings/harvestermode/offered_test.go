package harvestermode

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

type nodeOpt func(*corev1.Node)

// offerNode is a node as Harvester nodes are: Ready, labelled with its hostname and by
// virt-handler as able to run VMs.
func offerNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, kubevirtv1.NodeSchedulable: "true"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func nodeLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func dropLabel(k string) nodeOpt { return func(n *corev1.Node) { delete(n.Labels, k) } }

func nodeAnnotation(k, v string) nodeOpt {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
}

func nodeTaint(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func notReadyNode(n *corev1.Node) {
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
}

func cordonedNode(n *corev1.Node) { n.Spec.Unschedulable = true }

// launcherPod is the VMI's virt-launcher pod on node-0 with KubeVirt's node selector
// (kubevirt.io/schedulable=true) and, when given, required node affinity terms.
func launcherPod(sel map[string]string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "virt-launcher-vm-abcde",
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "vmi-uid"}},
		Spec:   corev1.PodSpec{NodeName: "node-0", NodeSelector: map[string]string{kubevirtv1.NodeSchedulable: "true"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for k, v := range sel {
		p.Spec.NodeSelector[k] = v
	}
	if len(terms) > 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	return p
}

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// TestOfferedTargets: each case names how Harvester's offer differs from what Kubernetes'
// scheduler (and migranet's feasibleTarget, which follows it) would do with the same target pod,
// or that it agrees. node-0 is always the VMI's node.
func TestOfferedTargets(t *testing.T) {
	tests := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*corev1.Node
		want  []string
	}{
		{name: "agrees: every other node of a plain cluster, never the VMI's own node",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1"), offerNode("node-2")},
			want: []string{"node-1", "node-2"}},
		{name: "differs: a node not Ready, tainted not-ready, is offered (Harvester reads neither the condition nor that taint)",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", notReadyNode)},
			want: []string{"node-1"}},
		{name: "differs: a NoSchedule taint the pod does not tolerate does not keep a node out (only two taint keys are read)",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", nodeTaint("dedicated", corev1.TaintEffectNoSchedule))},
			want: []string{"node-1"}},
		{name: "differs: the unschedulable taint keeps a node out at any effect, PreferNoSchedule too, tolerated or not",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", nodeTaint(corev1.TaintNodeUnschedulable, corev1.TaintEffectPreferNoSchedule)),
				offerNode("node-2", nodeTaint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), offerNode("node-3")},
			want: []string{"node-3"}},
		{name: "differs: a cordoned node is not offered even when the pod tolerates the cordon",
			pod: func() *corev1.Pod {
				p := launcherPod(nil)
				p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
				return p
			}(), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", cordonedNode), offerNode("node-2")},
			want: []string{"node-2"}},
		{name: "differs: Harvester's maintenance and drain annotations keep a node out, any value, the empty one too (Kubernetes reads no annotation)",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", nodeAnnotation(AnnotationMaintainStatus, "running")),
				offerNode("node-2", nodeAnnotation(AnnotationDrainRequested, "")), offerNode("node-3", nodeAnnotation("harvesterhci.io/other", "x"))},
			want: []string{"node-3"}},
		{name: "differs: a witness node is offered when the pod's selector does not exclude it",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("witness", nodeLabels(settings.WitnessLabel, "true"))},
			want: []string{"witness"}},
		{name: "agrees: a witness node without virt-handler's schedulable label fails the pod's selector",
			pod: launcherPod(nil), nodes: []*corev1.Node{offerNode("node-0"), offerNode("witness", nodeLabels(settings.WitnessLabel, "true"), dropLabel(kubevirtv1.NodeSchedulable))},
			want: nil},
		{name: "agrees: a label of the pod's nodeSelector is required",
			pod: launcherPod(map[string]string{"zone": "a"}), nodes: []*corev1.Node{offerNode("node-0", nodeLabels("zone", "a")), offerNode("node-1", nodeLabels("zone", "b")), offerNode("node-2", nodeLabels("zone", "a"))},
			want: []string{"node-2"}},
		{name: "differs: kubernetes.io/hostname in the pod's nodeSelector is left out, so nodes the pin excludes are offered",
			pod: launcherPod(map[string]string{corev1.LabelHostname: "node-0"}), nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1")},
			want: []string{"node-1"}},
		{name: "differs: two required affinity terms are ANDed (Kubernetes ORs them): a node matching one term only is not offered",
			pod: launcherPod(nil, term(expr("zone", corev1.NodeSelectorOpIn, "a")), term(expr("disk", corev1.NodeSelectorOpIn, "ssd"))),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("zone-only", nodeLabels("zone", "a")), offerNode("disk-only", nodeLabels("disk", "ssd")),
				offerNode("both", nodeLabels("zone", "a", "disk", "ssd"))},
			want: []string{"both"}},
		{name: "agrees: NotIn, Exists and DoesNotExist in one term",
			pod: launcherPod(nil, term(expr("zone", corev1.NodeSelectorOpNotIn, "b"), expr("rack", corev1.NodeSelectorOpExists), expr("gpu", corev1.NodeSelectorOpDoesNotExist))),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("zone-b", nodeLabels("zone", "b", "rack", "r1")), offerNode("no-rack"),
				offerNode("gpu", nodeLabels("rack", "r1", "gpu", "yes")), offerNode("fits", nodeLabels("rack", "r1"))},
			want: []string{"fits"}},
		{name: "differs: an affinity expression on kubernetes.io/hostname is left out",
			pod:   launcherPod(nil, term(expr(corev1.LabelHostname, corev1.NodeSelectorOpIn, "node-0"))),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1")},
			want:  []string{"node-1"}},
		{name: "differs: Gt and Lt are skipped, so a node failing them is offered",
			pod:   launcherPod(nil, term(expr("cores", corev1.NodeSelectorOpGt, "64"), expr("gen", corev1.NodeSelectorOpLt, "2"))),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("small", nodeLabels("cores", "8", "gen", "5"))},
			want:  []string{"small"}},
		{name: "differs: matchFields are not read, so a term naming one node by metadata.name offers the others",
			pod:   launcherPod(nil, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")}}),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1"), offerNode("node-2")},
			want:  []string{"node-1", "node-2"}},
		{name: "differs: a requirement a label selector cannot hold (In without values) makes Harvester answer an error: nothing offered",
			pod:   launcherPod(nil, term(expr("zone", corev1.NodeSelectorOpIn))),
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1", nodeLabels("zone", "a"))},
			want:  nil},
		{name: "no pod: nothing offered",
			nodes: []*corev1.Node{offerNode("node-0"), offerNode("node-1")},
			want:  nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := OfferedTargets(tc.pod, "node-0", tc.nodes)
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("OfferedTargets (-want +got):\n%s", d)
			}
		})
	}
}

// TestOfferedTargetsSorted: the answer is sorted whatever the node order (Harvester's cache
// order is arbitrary; the preflight compares by name).
func TestOfferedTargetsSorted(t *testing.T) {
	got := OfferedTargets(launcherPod(nil), "node-0", []*corev1.Node{offerNode("node-3"), nil, offerNode("node-1"), offerNode("node-0"), offerNode("node-2")})
	if d := gocmp.Diff([]string{"node-1", "node-2", "node-3"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// vmiFor is the running VMI of launcherPod, changed by mod.
func vmiFor(mod func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm", UID: "vmi-uid"},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "node-0"}}
	if mod != nil {
		mod(v)
	}
	return v
}

// TestActivePod: Harvester's getVMIPod. Faults caught: a finished pod counted (a VMI after a
// migration has its old Succeeded pod: Harvester would then offer nothing); another VMI's pod or
// a pod of another namespace picked; a terminating pod left out (Harvester filters on the phase
// only); one of several active pods picked (Harvester answers an error).
func TestActivePod(t *testing.T) {
	pod := func(name, ns, uid string, phase corev1.PodPhase, mod ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{kubevirtv1.CreatedByLabel: uid}},
			Status: corev1.PodStatus{Phase: phase}}
		for _, m := range mod {
			m(p)
		}
		return p
	}
	terminating := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		want     string
		wantWhy  string
		noVMIArg bool
	}{
		{name: "the one running pod", pods: []*corev1.Pod{pod("a", "default", "vmi-uid", corev1.PodRunning)}, want: "a"},
		{name: "a finished pod of an earlier node does not count",
			pods: []*corev1.Pod{pod("old", "default", "vmi-uid", corev1.PodSucceeded), pod("failed", "default", "vmi-uid", corev1.PodFailed), pod("a", "default", "vmi-uid", corev1.PodRunning)}, want: "a"},
		{name: "other VMIs' and other namespaces' pods do not count",
			pods: []*corev1.Pod{pod("x", "default", "other-uid", corev1.PodRunning), pod("y", "elsewhere", "vmi-uid", corev1.PodRunning), pod("a", "default", "vmi-uid", corev1.PodPending)}, want: "a"},
		{name: "a terminating pod still counts", pods: []*corev1.Pod{pod("a", "default", "vmi-uid", corev1.PodRunning, terminating)}, want: "a"},
		{name: "two active pods (a migration's target pod): none, Harvester answers an error",
			pods: []*corev1.Pod{pod("b", "default", "vmi-uid", corev1.PodPending), pod("a", "default", "vmi-uid", corev1.PodRunning)}, wantWhy: "2 active pods ([a b])"},
		{name: "no active pod", pods: []*corev1.Pod{pod("old", "default", "vmi-uid", corev1.PodSucceeded)}, wantWhy: "no active pod"},
		{name: "no VMI", noVMIArg: true, wantWhy: "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := vmiFor(nil)
			if tc.noVMIArg {
				v = nil
			}
			got, why := ActivePod(v, tc.pods)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want || (tc.wantWhy == "") != (why == "") || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("ActivePod = %q, %q; want %q, %q", name, why, tc.want, tc.wantWhy)
			}
		})
	}
}

// TestNotMigratable: Harvester's ValidateVMMigratable, which refuses before any node is looked
// at. Faults caught: any LiveMigratable condition read instead of the first; a Harvester
// migration in flight, a hostname pin, host devices or GPUs let through.
func TestNotMigratable(t *testing.T) {
	cond := func(s corev1.ConditionStatus, reason string) kubevirtv1.VirtualMachineInstanceCondition {
		return kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: s, Reason: reason}
	}
	tests := []struct {
		name string
		mod  func(*kubevirtv1.VirtualMachineInstance)
		want string
	}{
		{name: "running, nothing against it"},
		{name: "LiveMigratable True", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{cond(corev1.ConditionTrue, "")}
		}},
		{name: "only the first LiveMigratable condition counts", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{cond(corev1.ConditionTrue, ""), cond(corev1.ConditionFalse, "X")}
		}},
		{name: "LiveMigratable False", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{cond(corev1.ConditionFalse, "DisksNotLiveMigratable")}
		}, want: "LiveMigratable condition is False (DisksNotLiveMigratable)"},
		{name: "not running", mod: func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Phase = kubevirtv1.Scheduled }, want: "not running"},
		{name: "Harvester's migration in flight", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Annotations = map[string]string{AnnotationMigrationUID: "u"}
		}, want: AnnotationMigrationUID},
		{name: "pinned by hostname", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-0"}
		}, want: "nodeSelector pins it"},
		{name: "host device", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "nic"}}
		}, want: "host (PCIe or USB) devices"},
		{name: "GPU", mod: func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu"}}
		}, want: "GPUs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NotMigratable(vmiFor(tc.mod))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("NotMigratable = %q, want %q", got, tc.want)
			}
		})
	}
}
