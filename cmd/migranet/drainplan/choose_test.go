package drainplan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")}}}
}

func prefer(weight int32, nodes ...string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}
}

func podPreferring(terms ...corev1.PreferredSchedulingTerm) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	if len(terms) > 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
	}
	return p
}

func tolerating(p *corev1.Pod, key string) *corev1.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return p
}

// TestChoose: the node kube-scheduler's default profile picks. Faults caught, each seen to fail
// once: tolerations ignored (the tolerated taint still steers away from n2).
func TestChoose(t *testing.T) {
	busy := Usage{CPU: 6000, Memory: 12 << 30}
	soft := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectPreferNoSchedule}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		cands []Candidate
		want  string
		ties  []string
	}{
		{"no preference, equal nodes: a tie", podPreferring(), []Candidate{{Node: node("n2")}, {Node: node("n3")}}, "n2", []string{"n3"}},
		{"the less allocated node", podPreferring(), []Candidate{{Node: node("n2"), Usage: busy}, {Node: node("n3")}}, "n3", nil},
		{"the VMI's preferred node wins over room", podPreferring(prefer(100, "n2")), []Candidate{{Node: node("n2"), Usage: busy}, {Node: node("n3")}}, "n2", nil},
		{"the heavier preference", podPreferring(prefer(100, "n3"), prefer(50, "n2")), []Candidate{{Node: node("n2")}, {Node: node("n3")}}, "n3", nil},
		{"an untolerated PreferNoSchedule taint", podPreferring(), []Candidate{{Node: node("n2", soft)}, {Node: node("n3")}}, "n3", nil},
		// The near miss: the same taint tolerated scores nothing; the nodes tie again.
		{"a tolerated PreferNoSchedule taint", tolerating(podPreferring(), "maintenance"), []Candidate{{Node: node("n2", soft)}, {Node: node("n3")}}, "n2", []string{"n3"}},
		{"nothing to choose", podPreferring(), nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Choose(tc.pod, tc.cands)
			if c.Node != tc.want || len(c.Ties) != len(tc.ties) {
				t.Errorf("Choose = %+v, want %s ties %v", c, tc.want, tc.ties)
			}
		})
	}
}

// TestUsageOf: what the scheduler counts of a node's pods. Faults caught, each seen to fail once:
// the non-zero defaults per pod instead of per container (the sidecar's memory default lost).
func TestUsageOf(t *testing.T) {
	p := podPreferring()
	p.Spec.NodeName = "n2"
	idle := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2", Containers: []corev1.Container{{Name: "c"}}}}
	done := p.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	u := UsageOf([]*corev1.Pod{p, idle, done, {Spec: corev1.PodSpec{}}})["n2"]
	if u.CPU != 1100 || u.Memory != 1<<30+200<<20 {
		t.Errorf("usage %+v: want the pod's requests and the scheduler's non-zero defaults of the idle one, not the finished one", u)
	}
	// The defaults are per container, per resource: a launcher's sidecar that requests cpu only
	// counts the memory default; the near miss is a pod whose compute container requests both,
	// where a per-pod default would add nothing for the sidecar.
	sidecar := podPreferring()
	sidecar.Spec.NodeName = "n3"
	sidecar.Spec.Containers = append(sidecar.Spec.Containers, corev1.Container{Name: "guest-console-log",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m")}}})
	if u := UsageOf([]*corev1.Pod{sidecar})["n3"]; u.CPU != 1005 || u.Memory != 1<<30+200<<20 {
		t.Errorf("usage %+v: want 1005m and 1Gi + the memory default of the sidecar", u)
	}
}
