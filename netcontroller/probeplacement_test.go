package netcontroller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestVirtHandlerPlacement(t *testing.T) {
	critical := corev1.Toleration{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	kvWith := func(np *kubevirtv1.NodePlacement) *kubevirtv1.KubeVirt {
		return &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Workloads: &kubevirtv1.ComponentConfig{NodePlacement: np}}}
	}
	for _, tc := range []struct {
		name string
		kv   *kubevirtv1.KubeVirt
		want Placement
	}{
		// Faults caught: the agent placed where virt-handler is not (or not where it is) because
		// the default selector, virt-handler's own toleration or a workloads field is dropped.
		{"no KubeVirt CR: KubeVirt's default", nil,
			Placement{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Tolerations: []corev1.Toleration{critical}}},
		{"no workloads", &kubevirtv1.KubeVirt{},
			Placement{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Tolerations: []corev1.Toleration{critical}}},
		{"workloads without a placement", kvWith(nil),
			Placement{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Tolerations: []corev1.Toleration{critical}}},
		{"selector, affinity and tolerations added to the defaults",
			kvWith(&kubevirtv1.NodePlacement{NodeSelector: map[string]string{"virt": "yes"}, Affinity: affinity, Tolerations: []corev1.Toleration{gpu}}),
			Placement{NodeSelector: map[string]string{"kubernetes.io/os": "linux", "virt": "yes"}, Affinity: affinity, Tolerations: []corev1.Toleration{critical, gpu}}},
		{"a selector naming the OS label keeps its value",
			kvWith(&kubevirtv1.NodePlacement{NodeSelector: map[string]string{"kubernetes.io/os": "windows"}}),
			Placement{NodeSelector: map[string]string{"kubernetes.io/os": "windows"}, Tolerations: []corev1.Toleration{critical}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *kubevirtv1.KubeVirt
			if tc.kv != nil {
				before = tc.kv.DeepCopy()
			}
			got := VirtHandlerPlacement(tc.kv)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("Equal says %+v differs from itself", got)
			}
			if tc.kv != nil && !equality.Semantic.DeepEqual(before, tc.kv) {
				t.Fatalf("the KubeVirt CR was changed: %+v", tc.kv.Spec.Workloads)
			}
		})
	}
}

func TestPlacementEqual(t *testing.T) {
	base := VirtHandlerPlacement(nil)
	for _, tc := range []struct {
		name string
		a, b Placement
		want bool
	}{
		{"both empty, nil and empty collections", Placement{}, Placement{NodeSelector: map[string]string{}, Tolerations: []corev1.Toleration{}}, true},
		{"same", base, VirtHandlerPlacement(nil), true},
		{"a selector more", base, Placement{NodeSelector: map[string]string{"kubernetes.io/os": "linux", "a": "b"}, Tolerations: base.Tolerations}, false},
		{"a toleration less", base, Placement{NodeSelector: base.NodeSelector}, false},
		{"an affinity more", base, Placement{NodeSelector: base.NodeSelector, Tolerations: base.Tolerations, Affinity: &corev1.Affinity{}}, false},
	} {
		if got := tc.a.Equal(tc.b); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Fault caught: the apply configuration carrying more than the placement (the containers, which
// server-side apply would then own and could clear on the next change).
func TestPlacementPatchHoldsOnlyThePlacement(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ProbeDaemonSet, Namespace: "ns"}}
	u, err := placementPatch(ds, VirtHandlerPlacement(nil))
	if err != nil {
		t.Fatal(err)
	}
	spec, ok, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if !ok {
		t.Fatalf("no spec.template.spec in %v", u.Object)
	}
	for k := range spec {
		if k != "nodeSelector" && k != "tolerations" {
			t.Errorf("field %q in the placement patch", k)
		}
	}
	if u.GetName() != ProbeDaemonSet || u.GetNamespace() != "ns" || u.GetKind() != "DaemonSet" {
		t.Errorf("patch names %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
}
