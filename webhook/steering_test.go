package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// steerState is a State of three nodes, the VMI on node-0 and node-0's path to node-1 failing.
type steerState struct {
	paths      *health.PathHealth
	migrations []*kubevirtv1.VirtualMachineInstanceMigration
}

func (steerState) VMI(_ context.Context, ns, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	if ns == testNS && name == testVMI {
		return vmi("node-0", nil), nil
	}
	return nil, nil
}
func (s steerState) MigrationsOf(context.Context, string, string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	return s.migrations, nil
}
func (steerState) KubeVirt(context.Context) (*kubevirtv1.KubeVirt, error) {
	return readyKubeVirt(), nil
}
func (steerState) Settings(context.Context) (*migrationcheck.SettingsView, error) {
	return &migrationcheck.SettingsView{Hash: checktest.Hash}, nil
}
func (steerState) Nodes(context.Context) (*migrationcheck.NodeSet, error) {
	return &migrationcheck.NodeSet{Nodes: []*corev1.Node{node("node-0"), node("node-1"), node("node-2")}}, nil
}
func (steerState) Pods(context.Context) (migrationcheck.PodView, error)     { return nil, nil }
func (steerState) Network() *health.Snapshot                                { return checktest.ReadySnapshot() }
func (s steerState) Paths(context.Context) *health.PathHealth               { return s.paths }
func (steerState) Traffic(context.Context) (*migrationcheck.Traffic, error) { return nil, nil }

// TestTargetSteererPatch: the JSON patch the webhook answers, applied to the pod as the API server
// would, gives the steered affinity and the annotation, and keeps everything else; pods that are no
// migration target get no patch. Faults caught, each seen to fail once: the annotation key not
// escaped (~1); "replace" on a pod without affinity (the API server refuses the patch); the pod's
// other annotations dropped.
func TestTargetSteererPatch(t *testing.T) {
	// The webhook judges the reports at the time of the review: fresh ones, a round just done.
	fresh := func(node string, failing ...v1beta1.PeerPath) *v1beta1.PathReport {
		now := time.Now()
		return &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, Network: checktest.PathNet, MTU: 9000, IntervalSeconds: 20,
			Since: metav1.NewMicroTime(now.Add(-time.Hour)), Failing: failing,
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-2 * time.Second)), Completed: metav1.NewMicroTime(now.Add(-time.Second))}}
	}
	h := &TargetSteerer{State: steerState{paths: checktest.Health(fresh("node-0", v1beta1.PeerPath{Node: "node-1", Reason: v1beta1.PathMTU, Largest: 1500}),
		fresh("node-1"), fresh("node-2"))}, Decoder: admission.NewDecoder(runtime.NewScheme())}
	target := func(annotations map[string]string, affinity *corev1.Affinity) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, GenerateName: "virt-launcher-", Annotations: annotations,
				Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "uid-1"}},
			Spec: corev1.PodSpec{Affinity: affinity, Containers: []corev1.Container{{Name: "compute", Image: "x"}}}}
	}
	own := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	for name, pod := range map[string]*corev1.Pod{
		"no affinity":            target(map[string]string{kubevirtv1.DomainAnnotation: testVMI, kubevirtv1.MigrationJobNameAnnotation: "move", "keep": "me"}, nil),
		"the VMI's own affinity": target(map[string]string{kubevirtv1.DomainAnnotation: testVMI, kubevirtv1.MigrationJobNameAnnotation: "move", "keep": "me"}, own),
	} {
		t.Run(name, func(t *testing.T) {
			raw, _ := json.Marshal(pod)
			resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
			// The API server applies response.patch only with its type (and refuses one without).
			if !resp.Allowed || len(resp.Patch) == 0 || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("response %+v: want allowed with a JSON patch", resp)
			}
			ops := resp.Patch
			patch, err := jsonpatchv5.DecodePatch(ops)
			if err != nil {
				t.Fatal(err)
			}
			out, err := patch.Apply(raw)
			if err != nil {
				t.Fatalf("the patch %s does not apply: %v", ops, err)
			}
			got := &corev1.Pod{}
			if err := json.Unmarshal(out, got); err != nil {
				t.Fatal(err)
			}
			want := pod.DeepCopy()
			var st migrationcheck.Steering
			if err := json.Unmarshal([]byte(got.Annotations[migrationcheck.SteeringAnnotation]), &st); err != nil || len(st.Excluded) != 1 || st.Excluded[0].Node != "node-1" || st.Migration != "move" {
				t.Fatalf("annotation %q: %+v %v", got.Annotations[migrationcheck.SteeringAnnotation], st, err)
			}
			st.Apply(want)
			want.Annotations[migrationcheck.SteeringAnnotation] = got.Annotations[migrationcheck.SteeringAnnotation]
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			if string(wantJSON) != string(gotJSON) {
				t.Errorf("patched pod\n%s\nwant\n%s", gotJSON, wantJSON)
			}
		})
	}
	for name, pod := range map[string]*corev1.Pod{
		"a VMI's own virt-launcher pod": {ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher"}}},
		"an unknown VMI's target":       target(map[string]string{kubevirtv1.DomainAnnotation: "ghost"}, nil),
		"a bound target": func() *corev1.Pod {
			p := target(map[string]string{kubevirtv1.DomainAnnotation: testVMI}, nil)
			p.Spec.NodeName = "node-2"
			return p
		}(),
	} {
		raw, _ := json.Marshal(pod)
		resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
		if !resp.Allowed || len(resp.Patches) != 0 || len(resp.Patch) != 0 || resp.PatchType != nil {
			t.Errorf("%s: %+v, want allowed unchanged", name, resp)
		}
	}
}

// TestTargetSteererDecentralizedTarget: the target pod of a decentralized migration's receiving
// side is left alone (its source is outside the probed network), judged from the cached
// migration the pod's job label names. Fault caught, seen to fail once: the cached migration not
// looked up (the pod judged as a local migration's and steered).
func TestTargetSteererDecentralizedTarget(t *testing.T) {
	now := time.Now()
	fresh := func(node string, failing ...v1beta1.PeerPath) *v1beta1.PathReport {
		return &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, Network: checktest.PathNet, MTU: 9000, IntervalSeconds: 20,
			Since: metav1.NewMicroTime(now.Add(-time.Hour)), Failing: failing,
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-2 * time.Second)), Completed: metav1.NewMicroTime(now.Add(-time.Second))}}
	}
	receive := vmim("move", testVMI, "")
	receive.UID = "uid-1"
	receive.Spec.Receive = &kubevirtv1.VirtualMachineInstanceMigrationTarget{MigrationID: "m"}
	h := &TargetSteerer{State: steerState{migrations: []*kubevirtv1.VirtualMachineInstanceMigration{receive},
		paths: checktest.Health(fresh("node-0", v1beta1.PeerPath{Node: "node-1", Reason: v1beta1.PathMTU, Largest: 1500}), fresh("node-1"), fresh("node-2"))},
		Decoder: admission.NewDecoder(runtime.NewScheme())}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS,
		Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: "uid-1"},
		Annotations: map[string]string{kubevirtv1.DomainAnnotation: testVMI, kubevirtv1.MigrationJobNameAnnotation: "move"}}}
	raw, _ := json.Marshal(pod)
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed || len(resp.Patches) != 0 || len(resp.Patch) != 0 {
		t.Errorf("%+v, want allowed unchanged", resp)
	}
}
