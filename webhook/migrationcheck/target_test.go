package migrationcheck

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// launcher is a virt-launcher pod of the test VMI on node, requesting cpu and memory in its
// compute container (the rest as KubeVirt v1.8.4 renders it does not matter to the scheduler's
// resource fit beyond the totals).
func launcher(node, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "virt-launcher-vm-abcde",
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "vmi-uid"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func other(name, node, cpu, mem string) *corev1.Pod {
	p := launcher(node, cpu, mem)
	p.Name, p.Labels = name, map[string]string{"app": "web"}
	return p
}

func allocatable(cpu, mem, pods string) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods: resource.MustParse(pods)}
	}
}

func taint(key, value string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// schedulerCreate is baseCreate with the VMI's pod known and room on every node.
func schedulerCreate() CreateInput {
	in := baseCreate()
	in.VMI.UID = "vmi-uid"
	for _, n := range in.Nodes {
		allocatable("8", "16Gi", "110")(n)
	}
	in.Pods = PodList{launcher("node-0", "1", "2Gi")}
	return in
}

// TestFeasibleTargetAsScheduled judges migrations the way kube-scheduler will place KubeVirt's
// target pod. Faults caught, one per case: taints ignored (the case that started this: every other
// node tainted, the migration admitted and its target pod Pending forever); tolerations ignored;
// required node affinity ignored, or a preferred term refusing; KubeVirt's CPU-model selector
// ignored; the node's pods' requests not subtracted; the pod-count limit ignored; a node with the
// VMI's earlier target pod counted (KubeVirt's anti-affinity); the per-reason counts wrong.
func TestFeasibleTargetAsScheduled(t *testing.T) {
	dedicated := taint("dedicated", "db", corev1.TaintEffectNoSchedule)
	zoneIn := func(zones ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
	}
	tests := []struct {
		name   string
		modify func(in *CreateInput)
		// want: "" admitted, else the whole reason list of the denial.
		want string
	}{
		{name: "every other node tainted, not tolerated", modify: func(in *CreateInput) {
			dedicated(in.Nodes[1])
			dedicated(in.Nodes[2])
		}, want: "0 of 3 nodes can take its target pod: 2 have taint dedicated=db:NoSchedule that the VMI does not tolerate, 1 is its source node node-0; " +
			"remove the taint from a node (kubectl taint node <node> dedicated=db:NoSchedule-) or add a matching toleration to the VMI's spec.tolerations"},
		{name: "tainted, tolerated by key and value", modify: func(in *CreateInput) {
			dedicated(in.Nodes[1])
			dedicated(in.Nodes[2])
			in.VMI.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "tolerated for another value", modify: func(in *CreateInput) {
			dedicated(in.Nodes[1])
			dedicated(in.Nodes[2])
			in.VMI.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web"}}
		}, want: "0 of 3 nodes can take its target pod: 2 have taint dedicated=db:NoSchedule that the VMI does not tolerate, 1 is its source node node-0"},
		{name: "NoExecute counts, PreferNoSchedule does not", modify: func(in *CreateInput) {
			taint("gpu", "", corev1.TaintEffectNoExecute)(in.Nodes[1])
			taint("spot", "", corev1.TaintEffectPreferNoSchedule)(in.Nodes[2])
		}},
		{name: "required node affinity matching only the current node", modify: func(in *CreateInput) {
			in.Nodes[0].Labels["zone"] = "a"
			in.Nodes[1].Labels["zone"] = "b"
			in.VMI.Spec.Affinity = zoneIn("a")
		}, want: "0 of 3 nodes can take its target pod: 2 do not match the VMI's required node affinity, 1 is its source node node-0; " +
			"change the VMI's spec.affinity or label another node to match it"},
		{name: "required node affinity matching another node", modify: func(in *CreateInput) {
			in.Nodes[0].Labels["zone"] = "a"
			in.Nodes[2].Labels["zone"] = "a"
			in.VMI.Spec.Affinity = zoneIn("a")
		}},
		{name: "a preferred term never refuses", modify: func(in *CreateInput) {
			in.VMI.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z"}}}}}}}}
		}},
		{name: "a named CPU model only the current node has", modify: func(in *CreateInput) {
			in.VMI.Spec.Domain.CPU = &kubevirtv1.CPU{Model: "Skylake-Server"}
			in.Nodes[0].Labels["cpu-model.node.kubevirt.io/Skylake-Server"] = "true"
		}, want: "0 of 3 nodes can take its target pod: 2 lack label cpu-model.node.kubevirt.io/Skylake-Server=true (the VMI's CPU model Skylake-Server), 1 is its source node node-0; " +
			"the target pod needs a node labelled cpu-model.node.kubevirt.io/Skylake-Server=true: add one, or change the VMI's CPU model Skylake-Server"},
		{name: "host-model: the source's host-model CPU is supported by one other node", modify: func(in *CreateInput) {
			in.VMI.Spec.Domain.CPU = &kubevirtv1.CPU{Model: kubevirtv1.CPUModeHostModel}
			in.Nodes[0].Labels["host-model-cpu.node.kubevirt.io/Cascadelake-Server"] = "true"
			in.Nodes[2].Labels["cpu-model-migration.node.kubevirt.io/Cascadelake-Server"] = "true"
		}},
		{name: "host-model: no other node supports the source's host-model CPU", modify: func(in *CreateInput) {
			in.VMI.Spec.Domain.CPU = &kubevirtv1.CPU{Model: kubevirtv1.CPUModeHostModel}
			in.Nodes[0].Labels["host-model-cpu.node.kubevirt.io/Cascadelake-Server"] = "true"
		}, want: "0 of 3 nodes can take its target pod: 2 lack label cpu-model-migration.node.kubevirt.io/Cascadelake-Server=true (the source node's host-model CPU), 1 is its source node node-0"},
		{name: "host-model: a node with an obsolete host-model is refused by the affinity term", modify: func(in *CreateInput) {
			in.VMI.Spec.Domain.CPU = &kubevirtv1.CPU{Model: kubevirtv1.CPUModeHostModel}
			in.Nodes[0].Labels["host-model-cpu.node.kubevirt.io/Haswell"] = "true"
			for _, n := range in.Nodes[1:] {
				n.Labels["cpu-model-migration.node.kubevirt.io/Haswell"] = "true"
				n.Labels[kubevirtv1.NodeHostModelIsObsoleteLabel] = "true"
			}
		}, want: "0 of 3 nodes can take its target pod: 2 do not match the VMI's required node affinity, 1 is its source node node-0"},
		{name: "no room: memory", modify: func(in *CreateInput) {
			in.Pods = append(in.Pods.(PodList), other("big-1", "node-1", "1", "15Gi"), other("big-2", "node-2", "1", "14Gi"), other("small", "node-2", "100m", "512Mi"))
		}, want: "0 of 3 nodes can take its target pod: 2 have too little memory free (the target pod requests 2Gi; the most any has free is 1536Mi), 1 is its source node node-0; " +
			"free memory on a node or add a node"},
		{name: "no room: cpu on one, memory on the other", modify: func(in *CreateInput) {
			in.Pods = append(in.Pods.(PodList), other("cpu-hog", "node-1", "7500m", "1Gi"), other("mem-hog", "node-2", "1", "15Gi"))
		}, want: "0 of 3 nodes can take its target pod: 1 is its source node node-0, 1 has too little cpu free (the target pod requests 1; it has 500m free), " +
			"1 has too little memory free (the target pod requests 2Gi; it has 1Gi free); free cpu on a node or add a node"},
		{name: "no room, but a priority class may preempt: not refused", modify: func(in *CreateInput) {
			in.VMI.Spec.PriorityClassName = "vm-critical"
			in.Pods = append(in.Pods.(PodList), other("big-1", "node-1", "1", "15Gi"), other("big-2", "node-2", "1", "15Gi"))
		}},
		{name: "room on one node is enough; finished pods free theirs", modify: func(in *CreateInput) {
			done := other("done", "node-2", "8", "16Gi")
			done.Status.Phase = corev1.PodSucceeded
			in.Pods = append(in.Pods.(PodList), other("mem-hog", "node-1", "1", "15Gi"), done)
		}},
		{name: "no room: pod count", modify: func(in *CreateInput) {
			allocatable("8", "16Gi", "1")(in.Nodes[1])
			allocatable("8", "16Gi", "1")(in.Nodes[2])
			in.Pods = append(in.Pods.(PodList), other("a", "node-1", "0", "0"), other("b", "node-2", "0", "0"))
		}, want: "0 of 3 nodes can take its target pod: 2 have no room for another pod (allocatable pods), 1 is its source node node-0"},
		{name: "a node with an earlier target pod of the VMI", modify: func(in *CreateInput) {
			earlier := launcher("node-1", "1", "2Gi")
			earlier.Name = "virt-launcher-vm-earlier"
			in.Pods = append(in.Pods.(PodList), earlier)
			dedicated(in.Nodes[2])
		}, want: "0 of 3 nodes can take its target pod: 1 is its source node node-0, 1 runs another pod of the VMI (KubeVirt's target pod anti-affinity), " +
			"1 has taint dedicated=db:NoSchedule that the VMI does not tolerate"},
		{name: "pods unknown: room is not judged, and a denial says so", modify: func(in *CreateInput) {
			in.Pods = nil
			dedicated(in.Nodes[1])
			dedicated(in.Nodes[2])
		}, want: "(not evaluated: room on the nodes (no pod cache))"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, indexed := range []bool{false, true} {
				in := schedulerCreate()
				tc.modify(&in)
				if indexed {
					in.index = newNodeIndex(in.Nodes)
				}
				_, msg, _ := infeasible(&in)
				if tc.want == "" {
					if msg != "" {
						t.Errorf("indexed=%v: refused, want admitted: %s", indexed, msg)
					}
					continue
				}
				if !strings.Contains(msg, tc.want) {
					t.Errorf("indexed=%v: message\n  %s\nwant it to contain\n  %s", indexed, msg, tc.want)
				}
			}
		})
	}
}

// TestNotEvaluatedWarns checks that a constraint migranet does not evaluate admits with a warning
// naming it, in enforce mode too. Fault caught: refusing (or silently admitting) what it did not
// judge.
func TestNotEvaluatedWarns(t *testing.T) {
	in := schedulerCreate()
	in.VMI.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	in.VMI.Spec.PriorityClassName = "vm-critical"
	got := EvaluateCreate(in)
	want := "admitted without evaluating the VMI's topology spread constraints, room on the nodes (priority class vm-critical may preempt pods)"
	if len(got) != 1 || got[0].Deny || !got[0].Warn || !strings.Contains(got[0].Message, want) {
		t.Fatalf("decisions %+v: want one warning: %s", got, want)
	}
}

// TestFits pins the scheduler's resource fit: requests of zero are not checked, extended
// resources count, a resource the node does not have is not free.
func TestFits(t *testing.T) {
	q := resource.MustParse
	alloc := corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi"), corev1.ResourcePods: q("10"), "devices.kubevirt.io/kvm": q("1k")}
	used := NodeUsage{Pods: 3, Requests: amounts{fixed: [3]int64{3000, 4 << 30, 0}}}
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: alloc}}
	na := allocOf(node)
	tests := []struct {
		req  corev1.ResourceList
		res  corev1.ResourceName
		free string
	}{
		{req: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("4Gi")}},
		{req: corev1.ResourceList{corev1.ResourceCPU: q("1001m")}, res: corev1.ResourceCPU, free: "1"},
		{req: corev1.ResourceList{corev1.ResourceMemory: q("5Gi"), corev1.ResourceCPU: q("2")}, res: corev1.ResourceCPU, free: "1"},
		{req: corev1.ResourceList{corev1.ResourceMemory: q("5Gi")}, res: corev1.ResourceMemory, free: "4Gi"},
		{req: corev1.ResourceList{"devices.kubevirt.io/kvm": q("1")}},
		{req: corev1.ResourceList{"devices.kubevirt.io/vhost-net": q("1")}, res: "devices.kubevirt.io/vhost-net", free: "0"},
		{req: corev1.ResourceList{"devices.kubevirt.io/vhost-net": q("0")}},
	}
	for _, tc := range tests {
		res, free, ok := fits(appendDemand(nil, tc.req), &na, &used)
		got := quantity(res, free)
		if ok != (tc.res == "") || res != tc.res || (!ok && got.String() != tc.free) {
			t.Errorf("fits(%v) = %s, %s, %v; want %q free %s", tc.req, res, got.String(), ok, tc.res, tc.free)
		}
	}
	three := allocOf(&corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: q("3")}}})
	if _, _, ok := fits(nil, &three, &NodeUsage{Pods: 3}); ok {
		t.Errorf("a fourth pod fits a node that allows three")
	}
}

// TestTrimPod checks the pod cache keeps what scheduling reads: the whole pod's requests (init
// containers and overhead included, as PodRequests sums them) and a virt-launcher's selector.
func TestTrimPod(t *testing.T) {
	q := resource.MustParse
	p := launcher("node-1", "1", "2Gi")
	p.Spec.NodeSelector = map[string]string{"kubevirt.io/schedulable": "true"}
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("3")}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: q("100Mi")}
	p.Spec.Volumes = []corev1.Volume{{Name: "big"}}
	out, err := TrimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*corev1.Pod)
	got := sumUsage([]*corev1.Pod{trimmed})
	want := [3]int64{3000, 2148 << 20, 0}
	if d := gocmp.Diff(want, got.Requests.fixed); d != "" || got.Pods != 1 || got.Requests.other != nil {
		t.Errorf("trimmed pod requests %v (%d pods), want %v", got.Requests, got.Pods, want)
	}
	if d := gocmp.Diff(p.Spec.NodeSelector, trimmed.Spec.NodeSelector); d != "" || trimmed.Spec.NodeName != "node-1" || len(trimmed.Spec.Volumes) != 0 {
		t.Errorf("trimmed pod keeps node %q, selector diff %s, %d volumes", trimmed.Spec.NodeName, d, len(trimmed.Spec.Volumes))
	}
	other := other("web", "node-1", "1", "1Gi")
	other.Spec.NodeSelector = map[string]string{"a": "b"}
	if o, _ := TrimPod(other); o.(*corev1.Pod).Spec.NodeSelector != nil {
		t.Errorf("a pod that is not virt-launcher keeps its node selector")
	}
}
