package webhook

import (
	"context"
	"encoding/json"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// SteeringPath is where the target pod steering webhook is served.
const SteeringPath = "/mutate-v1-pod-migration-target"

// +kubebuilder:webhook:path=/mutate-v1-pod-migration-target,mutating=true,failurePolicy=ignore,sideEffects=NoneOnDryRun,groups="",resources=pods,verbs=create,versions=v1,name=steer.migranet.io,admissionReviewVersions=v1,timeoutSeconds=3,reinvocationPolicy=Never

// TargetSteerer is the mutating webhook on pod CREATE, scoped by its objectSelector to
// KubeVirt's migration target pods (kubevirt.io=virt-launcher, kubevirt.io/migrationJobUID): it
// adds the node affinity migrationcheck.Steer decides, records what and why in the pod's
// migrationcheck.SteeringAnnotation and in an event on the migration, and never refuses a pod.
// It reads only State (informer stores).
type TargetSteerer struct {
	State   migrationcheck.State
	Decoder admission.Decoder
	// Metrics counts the pods it saw; nil counts nothing.
	Metrics *Metrics
	// Recorder receives the event on the migration; nil records none.
	Recorder record.EventRecorder
}

// Handle answers one pod CREATE review: the pod as KubeVirt made it plus the steering, or the pod
// unchanged (with the reason in the answer) when it is not steered.
func (s *TargetSteerer) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if req.Operation != "CREATE" || req.Kind.Kind != "Pod" || s.Decoder.Decode(req, pod) != nil {
		s.Metrics.steered(SteerNotTarget)
		return admission.Allowed("not a pod create")
	}
	if !migrationcheck.IsMigrationTarget(pod) {
		s.Metrics.steered(SteerNotTarget)
		return admission.Allowed("not a migration target pod")
	}
	in, skip, err := migrationcheck.GatherSteer(ctx, s.State, pod)
	if err != nil {
		s.Metrics.steered(SteerError)
		return admission.Allowed("not steered: reading the cache: " + err.Error())
	}
	if skip != "" {
		s.Metrics.steered(SteerUnchanged)
		return admission.Allowed("not steered: " + skip)
	}
	st := migrationcheck.Steer(in)
	if !st.Changes() {
		s.Metrics.steered(SteerUnchanged)
		return admission.Allowed("nothing to steer")
	}
	patch, err := steeringPatch(pod, &st)
	if err != nil {
		s.Metrics.steered(SteerError)
		return admission.Allowed("not steered: " + err.Error())
	}
	if st.NoTarget != "" {
		s.Metrics.steered(SteerNoTarget)
	} else {
		s.Metrics.steered(SteerSteered)
	}
	if req.DryRun == nil || !*req.DryRun {
		s.record(ctx, in.VMIM, &st)
	}
	return patched(patch)
}

// steeringPatch is the JSON patch, encoded, that gives pod st: its affinity replaced by the
// steered one, and the annotation saying what and why. Written directly, not diffed from the whole
// pod: the pod's other fields are never read or rewritten.
func steeringPatch(pod *corev1.Pod, st *migrationcheck.Steering) ([]byte, error) {
	note, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	steered := &corev1.Pod{Spec: corev1.PodSpec{Affinity: pod.Spec.Affinity.DeepCopy()}}
	st.Apply(steered)
	affinity := patchOp{Op: "replace", Path: "/spec/affinity", Value: steered.Spec.Affinity}
	if pod.Spec.Affinity == nil {
		affinity.Op = "add"
	}
	// RFC 6901: "/" in a key is written "~1".
	annotation := patchOp{Op: "add", Path: "/metadata/annotations/" + strings.ReplaceAll(migrationcheck.SteeringAnnotation, "/", "~1"), Value: string(note)}
	if pod.Annotations == nil {
		annotation = patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{migrationcheck.SteeringAnnotation: string(note)}}
	}
	return json.Marshal([]patchOp{affinity, annotation})
}

// patchOp is one JSON patch operation (RFC 6902) as the steering writes it: a plain struct, which
// encoding/json writes in one pass. jsonpatch.Operation's MarshalJSON output is scanned and
// compacted again by encoding/json, byte by byte: with a budget's longer preferred term and note
// that was most of the encoding's cost (BenchmarkSteeringPatch, 50 nodes at their inbound limit:
// 152 µs and 57 KB a pod before, 86 µs and 44 KB with patchOp).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// patched is the response that applies patch, an encoded JSON patch (admission.Patched would
// encode its operations again).
func patched(patch []byte) admission.Response {
	resp := admission.Allowed("")
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	return resp
}

// record leaves the event on the migration when the steering did more than require the cluster
// network, which every target pod of a migration network gets (asynchronous: the recorder queues
// it).
func (s *TargetSteerer) record(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration, st *migrationcheck.Steering) {
	if s.Recorder == nil || vmim == nil || vmim.Name == "" || vmim.UID == "" || !st.Notable() {
		return
	}
	ref := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: vmim.Namespace, Name: vmim.Name, UID: types.UID(vmim.UID)}}
	kind, reason := corev1.EventTypeNormal, settings.ReasonTargetSteered
	if st.NoTarget != "" {
		kind, reason = corev1.EventTypeWarning, settings.ReasonNoTargetLeft
	}
	s.Recorder.Event(ref, kind, reason, truncate(st.Summary(), maxEventMessage))
	ctrl.LoggerFrom(ctx).V(1).Info("migration target steered", "migration", vmim.Namespace+"/"+vmim.Name, "excluded", len(st.Excluded), "noTarget", st.NoTarget != "")
}

var _ admission.Handler = &TargetSteerer{}
