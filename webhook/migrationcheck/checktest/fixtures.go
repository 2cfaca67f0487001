package checktest

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
)

const (
	NS      = "ns"
	VMIName = "vm"
	Hash    = "0123456789abcdef"
	CN      = "migration"
	NAD     = "vm-migration-network-0123456789"
)

type NodeOpt func(*corev1.Node)

func WithLabels(kv ...string) NodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func WithoutLabel(k string) NodeOpt { return func(n *corev1.Node) { delete(n.Labels, k) } }

func NotReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }

func NoConditions(n *corev1.Node) { n.Status.Conditions = nil }

func Cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func WithTaint(key string, effect corev1.TaintEffect) NodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

// Node builds a Ready, schedulable node carrying the cluster network CN.
func Node(name string, opts ...NodeOpt) *corev1.Node {
	n := &corev1.Node{
		// What virt-handler's node labeller marks every node it can run VMs on with, and what
		// KubeVirt's target pod selects.
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{settings.ClusterNetworkLabelPrefix + CN: "true", kubevirtv1.NodeSchedulable: "true"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, // NotReady flips index 0
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func KubeVirt(status corev1.ConditionStatus, reason, message string) *kubevirtv1.KubeVirt {
	return &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Status: kubevirtv1.KubeVirtStatus{Conditions: []kubevirtv1.KubeVirtCondition{
			{Type: kubevirtv1.KubeVirtConditionProgressing, Status: corev1.ConditionFalse},
			{Type: kubevirtv1.KubeVirtConditionAvailable, Status: status, Reason: reason, Message: message},
		}},
	}
}

func ReadyKubeVirt() *kubevirtv1.KubeVirt {
	return KubeVirt(corev1.ConditionTrue, settings.KubeVirtReadyReason, "All components are ready.")
}

func ReadySnapshot() *health.Snapshot {
	return &health.Snapshot{Configured: true, Hash: Hash, AppliedHash: Hash, Network: NAD, ClusterNetwork: CN,
		Eligible: 3, Attached: 3, Ready: true, Reason: "AllNodesAttached"}
}

func VMI(nodeName string, sel map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: VMIName, Namespace: NS},
		Spec:       kubevirtv1.VirtualMachineInstanceSpec{NodeSelector: sel},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{NodeName: nodeName},
	}
}

func VMIM(name, vmiName string, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: NS, UID: types.UID("uid-" + name)},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
		Status:     kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
}

func PostCopyVMI(uid types.UID) *kubevirtv1.VirtualMachineInstance {
	v := VMI("node-0", nil)
	v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		Mode: kubevirtv1.MigrationPostCopy, MigrationUID: uid, SourceNode: "node-0", TargetNode: "node-1",
	}
	return v
}

// VMIMKind is the group, version and kind of a VirtualMachineInstanceMigration in a review.
var VMIMKind = metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}

// Review wraps obj (and old, for an update or delete) in an AdmissionReview.
func Review(op admissionv1.Operation, kind metav1.GroupVersionKind, name string, obj, old any) []byte {
	raw := func(o any) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, _ := json.Marshal(o)
		return runtime.RawExtension{Raw: b}
	}
	rv := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "fuzz", Kind: kind, Operation: op, Name: name, Namespace: NS,
			Object: raw(obj), OldObject: raw(old)},
	}
	b, _ := json.Marshal(rv)
	return b
}
