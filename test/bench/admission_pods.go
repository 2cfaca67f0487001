package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
)

// The steering webhook's cases: migranet's TargetSteerer and a no-op pod handler that decodes
// the pod as it does, served the same way on the same server.
const (
	podNoopPath    = "/noop-pod"
	podSteerPath   = "/steer-paths"
	podBudgetPath  = "/steer-budget"
	budgetInFlight = 100 // in-flight migrations whose target pod is bound: 2 into each of 50 nodes
)

// budgetPolicy is the default policy with a budget whose inbound limit is 2: the 50 nodes that
// take 2 migrations each (budgetTarget) are at their limit, every other node has room.
func budgetPolicy() *settings.MigrationPolicy {
	return &settings.MigrationPolicy{Budget: &settings.Budget{Bandwidth: resource.MustParse("1Gi"), InboundMigrations: 2}}
}

// budgetTarget is the node the target pod of the in-flight migration of VMI i is bound to, for the
// first budgetInFlight in-flight ones: n0500..n0549, two each.
func budgetTarget(i int) (string, bool) {
	if i%admInFlight != 0 || i/admInFlight >= budgetInFlight {
		return "", false
	}
	return fmt.Sprintf("n%04d", 500+i/admInFlight/2), true
}

// budgetTargetPod is the target pod of vmim bound to node, labelled as virt-controller labels it
// (what the steering counts), requesting nothing (the other cases' room is unchanged).
func budgetTargetPod(vmim *kubevirtv1.VirtualMachineInstanceMigration, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: "target-" + vmim.Name,
		Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.MigrationJobLabel: string(vmim.UID)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "compute", Image: "bench"}}}}
}

// noopPodHandler decodes the pod and admits it unchanged: the ceiling of a mutating pod webhook.
type noopPodHandler struct{ decoder admission.Decoder }

func (h noopPodHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return admission.Allowed("")
}

// steerPaths is benchPaths with one failing pair of the hard VMI's source, so that the steering
// excludes a node and runs the whole target search.
func steerPaths(nad string, now time.Time) *health.PathHealth {
	network := settings.NADRef(cluster.KubeVirtNamespace, nad)
	reports := make([]*v1beta1.PathReport, 0, admNodes)
	for i := range admNodes {
		r := &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%04d", i)}, Network: network, MTU: 9000,
			IntervalSeconds: 3600, Since: metav1.NewMicroTime(now.Add(-time.Hour)),
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-time.Second)), Completed: metav1.NewMicroTime(now), Peers: admNodes - 1}}
		if r.Name == hardSource {
			r.Failing = []v1beta1.PeerPath{{Node: "n0100", Reason: v1beta1.PathMTU, Largest: 1500}}
		}
		reports = append(reports, r)
	}
	return health.Paths(network, reports)
}

// podReviews is the pod case's body: the create of the hard VMI's target pod as virt-controller
// renders it (labels, annotations, node selector, the VMI's affinity and KubeVirt's anti-affinity,
// tolerations, requests).
func podReviews() ([][]byte, error) {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "virt-launcher-hard-", Namespace: benchNS,
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "bench-vmi-uid",
				kubevirtv1.MigrationJobLabel: "bench-vmim-uid", "vm.kubevirt.io/name": "hard"},
			Annotations: map[string]string{kubevirtv1.DomainAnnotation: "hard", kubevirtv1.MigrationJobNameAnnotation: "move-hard",
				"kubectl.kubernetes.io/default-container": "compute", "kubevirt.io/vm-generation": "1"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{poolLabel: "gold", zoneLabel: "z1", kubevirtv1.NodeSchedulable: "true"},
			Tolerations:  []corev1.Toleration{{Key: tolerated.Key, Operator: corev1.TolerationOpEqual, Value: tolerated.Value, Effect: tolerated.Effect}},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: rackLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kubevirtv1.CreatedByLabel: "bench-vmi-uid"}}, TopologyKey: corev1.LabelHostname}}},
			},
			Containers: []corev1.Container{{Name: "compute", Image: "example.invalid/kubevirt/virt-launcher:v1.8.4",
				Command:   []string{"/usr/bin/virt-launcher-monitor", "--qemu-timeout", "300s", "--name", "hard", "--namespace", benchNS},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "private", MountPath: "/var/run/kubevirt-private"}, {Name: "public", MountPath: "/var/run/kubevirt"},
					{Name: "ephemeral-disks", MountPath: "/var/run/kubevirt-ephemeral-disks"}, {Name: "libvirt-runtime", MountPath: "/var/run/libvirt"}}}},
			Volumes: []corev1.Volume{{Name: "private", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "public", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "ephemeral-disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "libvirt-runtime", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	req := &admissionv1.AdmissionRequest{
		UID: types.UID("bench-pod"), Operation: admissionv1.Create, Namespace: benchNS, Object: runtime.RawExtension{Raw: raw},
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		return nil, err
	}
	return [][]byte{body, body, body, body}, nil
}
