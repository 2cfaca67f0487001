package harvestermode

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What Harvester's migrate action offers as targets, read in Harvester v1.8.2's source
// (docs/harvester.md, "The `migrate` action and `findMigratableNodes`"). Harvester's UI lists the
// nodes its findMigratableNodes action answers, and its migrate action refuses a node outside that
// list, then pins the migration to the node with spec.addedNodeSelector
// {kubernetes.io/hostname: <node>}. Its list is not Kubernetes' scheduling: migranet's preflight
// shows both, so that a node Harvester offers but migranet refuses is seen before the refusal.

// Annotations Harvester v1.8.2 reads when it offers targets.
const (
	// AnnotationMaintainStatus marks a node in (or entering) Harvester's maintenance mode
	// (pkg/controller/master/node/maintain_controller.go, MaintainStatusAnnotationKey).
	AnnotationMaintainStatus = "harvesterhci.io/maintain-status"
	// AnnotationDrainRequested marks a node Harvester was asked to drain
	// (pkg/util/drainhelper/helper.go, DrainAnnotation).
	AnnotationDrainRequested = "harvesterhci.io/drain-requested"
	// AnnotationMigrationUID is on a VMI while a migration Harvester tracks is in flight
	// (pkg/util/constants.go, AnnotationMigrationUID).
	AnnotationMigrationUID = "harvesterhci.io/migrationUID"
)

// NotMigratable says why Harvester's findMigratableNodes and migrate actions refuse vmi before
// looking at any node, or returns "" when they go on. It follows
// pkg/util/virtualmachineinstance/virtualmachineinstance.go:ValidateVMMigratable @v1.8.2: the VMI
// must be in phase Running, carry no Harvester migration UID annotation, have no
// kubernetes.io/hostname in its own nodeSelector, no host devices and no GPUs, and the first
// LiveMigratable condition, when there is one, must not be False.
func NotMigratable(vmi *kubevirtv1.VirtualMachineInstance) string {
	switch {
	case vmi == nil:
		return "the VMI does not exist"
	case !vmi.IsRunning():
		return fmt.Sprintf("the VMI is not running (phase %q)", vmi.Status.Phase)
	case vmi.Annotations[AnnotationMigrationUID] != "":
		return "the VMI carries " + AnnotationMigrationUID + ": Harvester counts it as migrating"
	case vmi.Spec.NodeSelector[corev1.LabelHostname] != "":
		return "the VMI's nodeSelector pins it with " + corev1.LabelHostname
	case len(vmi.Spec.Domain.Devices.HostDevices) > 0:
		return "the VMI has host (PCIe or USB) devices"
	case len(vmi.Spec.Domain.Devices.GPUs) > 0:
		return "the VMI has GPUs"
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type != kubevirtv1.VirtualMachineInstanceIsMigratable {
			continue
		}
		if c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("KubeVirt's LiveMigratable condition is False (%s)", c.Reason)
		}
		break // only the first such condition counts
	}
	return ""
}

// ActivePod picks, among pods, the VMI's one active pod, the pod Harvester reads the target
// constraints from, or says why there is none to pick. As
// pkg/api/vm/handler.go:vmActionHandler.getVMIPod @v1.8.2 does: the pods in the VMI's namespace
// labelled kubevirt.io/created-by=<VMI UID>, whatever their kubevirt.io label, whose phase is
// neither Succeeded nor Failed (a pod being deleted still counts); none or more than one and
// Harvester's actions answer an error, so no node is offered (a migrate without a node name still
// goes on).
func ActivePod(vmi *kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) (*corev1.Pod, string) {
	if vmi == nil {
		return nil, "the VMI does not exist"
	}
	var active []*corev1.Pod
	for _, p := range pods {
		if p == nil || p.Namespace != vmi.Namespace || p.Labels[kubevirtv1.CreatedByLabel] != string(vmi.UID) {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			active = append(active, p)
		}
	}
	switch len(active) {
	case 1:
		return active[0], ""
	case 0:
		return nil, "the VMI has no active pod (" + kubevirtv1.CreatedByLabel + "=" + string(vmi.UID) + ")"
	}
	names := make([]string, len(active))
	for i, p := range active {
		names[i] = p.Name
	}
	sort.Strings(names)
	return nil, fmt.Sprintf("the VMI has %d active pods (%v): Harvester picks targets only while it has one", len(active), names)
}

// OfferedTargets names, sorted, the nodes Harvester v1.8.2's findMigratableNodes action offers as
// targets of a VMI that runs on vmiNode, whose one active virt-launcher pod is pod (ActivePod); nil
// when pod is nil. It follows pkg/api/vm/handler.go:vmActionHandler.findMigratableNodesByVMI
// @v1.8.2 with its helpers getNodeSelectorRequirementFromVMI, addNodeAffinityFilters,
// convertNodeSelectorRequirementToSelector and isDrained:
//
//   - A node must carry the labels of one label selector: every key of the pod's nodeSelector but
//     kubernetes.io/hostname, and every matchExpression of every term of the pod's required node
//     affinity, all ANDed. Kubernetes ORs the terms; Harvester requires them all. Expressions on
//     kubernetes.io/hostname are left out, Gt and Lt (and unknown operators) are skipped,
//     matchFields are not read. A requirement the label selector cannot hold makes Harvester answer
//     an error: nothing is offered.
//   - The VMI's own node is left out.
//   - A "drained" node is left out: one annotated harvesterhci.io/maintain-status or
//     harvesterhci.io/drain-requested (any value), one with spec.unschedulable, one with a taint
//     node.kubernetes.io/unreachable or node.kubernetes.io/unschedulable of any effect.
//
// Nothing else is looked at: not the node's Ready condition or its not-ready taint, not other
// taints against the pod's tolerations, not room for the pod, not the witness label, not the
// migration network.
func OfferedTargets(pod *corev1.Pod, vmiNode string, nodes []*corev1.Node) []string {
	if pod == nil {
		return nil
	}
	sel, ok := podLabelSelector(pod)
	if !ok {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if n == nil || n.Name == vmiNode || drained(n) || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// podLabelSelector is the one label selector Harvester builds from pod's scheduling constraints
// (see OfferedTargets); false when a requirement cannot be built.
func podLabelSelector(pod *corev1.Pod) (labels.Selector, bool) {
	var reqs []labels.Requirement
	add := func(key string, op selection.Operator, values []string) bool {
		r, err := labels.NewRequirement(key, op, values)
		if err != nil {
			return false
		}
		reqs = append(reqs, *r)
		return true
	}
	for k, v := range pod.Spec.NodeSelector {
		if k != corev1.LabelHostname && !add(k, selection.Equals, []string{v}) {
			return nil, false
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				op, known := labelOperator(e.Operator)
				if e.Key == corev1.LabelHostname || !known {
					continue
				}
				if !add(e.Key, op, e.Values) {
					return nil, false
				}
			}
		}
	}
	return labels.NewSelector().Add(reqs...), true
}

// labelOperator maps a node selector operator to the label selector's; false for Gt, Lt and any
// operator Harvester skips.
func labelOperator(op corev1.NodeSelectorOperator) (selection.Operator, bool) {
	switch op {
	case corev1.NodeSelectorOpIn:
		return selection.In, true
	case corev1.NodeSelectorOpNotIn:
		return selection.NotIn, true
	case corev1.NodeSelectorOpExists:
		return selection.Exists, true
	case corev1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist, true
	}
	return "", false
}

// drained is Harvester's test of a node it will not offer (isDrained).
func drained(n *corev1.Node) bool {
	if _, ok := n.Annotations[AnnotationMaintainStatus]; ok {
		return true
	}
	if _, ok := n.Annotations[AnnotationDrainRequested]; ok {
		return true
	}
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeUnschedulable {
			return true
		}
	}
	return false
}
