package targetpod

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// WhySchedulable is the reason of the kubevirt.io/schedulable=true requirement.
const WhySchedulable = "virt-handler's mark of a node that can run VMs"

// WhyAdded is the reason of the requirements spec.addedNodeSelector adds.
const WhyAdded = "spec.addedNodeSelector"

// Requirement is one label the target pod's node selector requires, and why.
type Requirement struct {
	Key, Value string
	// Why names where the requirement comes from, for messages: "the VMI's nodeSelector",
	// "spec.addedNodeSelector", "the VMI's CPU model Skylake", ...
	Why string
}

// Constraints are the target pod's scheduling constraints.
type Constraints struct {
	// Selector is the target pod's node selector, in the order a message should blame its keys:
	// KubeVirt's own labels first, then the VMI's and the migration's, then the CPU's.
	Selector []Requirement
	// Affinity is the target pod's affinity: the VMI's, with KubeVirt's DoesNotExist terms added
	// to its required node affinity. nil when there is none.
	Affinity *corev1.Affinity
	// Tolerations are the VMI's.
	Tolerations []corev1.Toleration
	// AntiAffinityUID: no node that runs a pod labelled kubevirt.io/created-by=AntiAffinityUID
	// (createMigrationPodAntiAffinityRule, topology kubernetes.io/hostname).
	AntiAffinityUID types.UID
	// NotEvaluated lists the constraints of the target pod this package does not render or the
	// caller cannot evaluate from the VMI alone, one phrase each.
	NotEvaluated []string
}

// Input is what the target pod is derived from.
type Input struct {
	VMI  *kubevirtv1.VirtualMachineInstance
	VMIM *kubevirtv1.VirtualMachineInstanceMigration
	// KubeVirt is the KubeVirt CR in force; nil for none.
	KubeVirt *kubevirtv1.KubeVirt
	// SourceNode is the node the VMI runs on; nil when unknown (its labels then add nothing).
	SourceNode *corev1.Node
	// SourcePodSelector is the node selector of the VMI's virt-launcher pod on the source node;
	// nil when unknown.
	SourcePodSelector map[string]string
	// SourceVendor, when set, is VendorKey of SourceNode's labels, found once per node by a
	// caller that renders many target pods; nil: Render finds it.
	SourceVendor *string
}

// Render derives the target pod's constraints the way createTargetPod builds the pod. VMI and VMIM
// must be set.
func Render(in Input) Constraints {
	vmi := in.VMI
	var buf [12]ranked // on the stack: a selector has a handful of keys
	r := renderer(buf[:0])

	// NewNodeSelectorRenderer: schedulable, architecture, cluster-wide, then the VMI's own (later
	// copies win).
	r = r.set(kubevirtv1.NodeSchedulable, "true", WhySchedulable)
	if a := vmi.Spec.Architecture; a != "" {
		r = r.set(corev1.LabelArchStable, strings.ToLower(a), "the VMI's architecture")
	}
	if kv := in.KubeVirt; kv != nil && kv.Spec.Configuration.DeveloperConfiguration != nil {
		r = r.setAll(kv.Spec.Configuration.DeveloperConfiguration.NodeSelectors, "the KubeVirt CR's developerConfiguration.nodeSelectors")
	}
	r = r.setAll(vmi.Spec.NodeSelector, "the VMI's nodeSelector")
	// Render's options (newNodeSelectorRenderer).
	cpu := vmi.Spec.Domain.CPU
	if vmi.IsCPUDedicated() {
		r = r.set(kubevirtv1.CPUManager, "true", "the VMI's dedicated CPU placement")
	}
	if cpu != nil && cpu.Model != "" && cpu.Model != kubevirtv1.CPUModeHostModel && cpu.Model != kubevirtv1.CPUModeHostPassthrough {
		r = r.set(kubevirtv1.CPUModelLabel+cpu.Model, "true", "the VMI's CPU model "+cpu.Model)
	}
	if cpu != nil {
		for _, f := range cpu.Features {
			if f.Policy == "" || f.Policy == "require" {
				r = r.set(kubevirtv1.CPUFeatureLabel+f.Name, "true", "the VMI's required CPU feature "+f.Name)
			}
		}
	}
	if mt := machineType(vmi); mt != "" {
		r = r.set(kubevirtv1.SupportedMachineTypeLabel+mt, "true", "the VMI's machine type "+mt)
	}
	if vmi.IsRealtimeEnabled() {
		r = r.set(kubevirtv1.RealtimeLabel, "true", "the VMI's realtime CPU")
	}

	// createTargetPod: the added node selector under the rendered one (a key both set keeps the
	// rendered value).
	for k, v := range in.VMIM.Spec.AddedNodeSelector {
		if !r.has(k) {
			r = r.set(k, v, WhyAdded)
		}
	}
	var notEvaluated []string
	if cpu != nil && cpu.Model == kubevirtv1.CPUModeHostModel {
		hm, ok := hostModelSelector(in.SourceNode, in.SourcePodSelector)
		if !ok {
			notEvaluated = append(notEvaluated, "the host-model CPU labels (the source node's "+kubevirtv1.HostModelCPULabel+"* label is not known)")
		}
		for _, k := range sortedKeys(hm) {
			r = r.set(k, hm[k], "the source node's host-model CPU")
		}
	}
	if !r.hasVendor() {
		if k := in.sourceVendor(); k != "" {
			r = r.set(k, "true", "the source node's CPU vendor")
		}
	}

	c := Constraints{Selector: r.ordered(), Tolerations: vmi.Spec.Tolerations, AntiAffinityUID: vmi.UID}
	c.Affinity = affinity(vmi)
	c.NotEvaluated = append(notEvaluated, notRendered(vmi, in.KubeVirt)...)
	return c
}

// renderer collects the node selector with the reason of each key, in a slice: a selector has a
// handful of keys. Its methods return the grown slice, so a renderer backed by an array on the
// caller's stack stays there.
type renderer []ranked

// ranked is a requirement and the rank of its reason.
type ranked struct {
	Requirement
	rank int
}

// set sets k to v for why; a later set of the same key wins, as in the pod's node selector map.
func (r renderer) set(k, v, why string) renderer {
	req := ranked{Requirement{Key: k, Value: v, Why: why}, rank(why)}
	for i := range r {
		if r[i].Key == k {
			r[i] = req
			return r
		}
	}
	return append(r, req)
}

func (r renderer) has(k string) bool {
	for i := range r {
		if r[i].Key == k {
			return true
		}
	}
	return false
}

// hasVendor reports whether the selector already has a CPU vendor key (getCPUVendorLabelKey).
func (r renderer) hasVendor() bool {
	for i := range r {
		if strings.HasPrefix(r[i].Key, kubevirtv1.CPUModelVendorLabel) {
			return true
		}
	}
	return false
}

// sourceVendor is the source node's CPU vendor key: SourceVendor's, else found in its labels.
func (in *Input) sourceVendor() string {
	if in.SourceVendor != nil {
		return *in.SourceVendor
	}
	if in.SourceNode == nil {
		return ""
	}
	return VendorKey(in.SourceNode.Labels)
}

func (r renderer) setAll(m map[string]string, why string) renderer {
	for k, v := range m {
		r = r.set(k, v, why)
	}
	return r
}

// rank orders the reasons for messages: the node's own fitness first, then what the user asked
// for, then what the CPU needs.
func rank(why string) int {
	switch {
	case strings.HasPrefix(why, "virt-handler"), strings.HasPrefix(why, "the VMI's architecture"):
		return 0
	case why == "the VMI's nodeSelector":
		return 1
	case why == WhyAdded:
		return 2
	case strings.HasPrefix(why, "the KubeVirt CR"):
		return 3
	}
	return 4
}

func (r renderer) ordered() []Requirement {
	slices.SortFunc(r, func(a, b ranked) int {
		if d := a.rank - b.rank; d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	out := make([]Requirement, len(r))
	for i := range r {
		out[i] = r[i].Requirement
	}
	return out
}

// machineType is newNodeSelectorRenderer's: the status's machine type, else the spec's.
func machineType(vmi *kubevirtv1.VirtualMachineInstance) string {
	if m := vmi.Status.Machine; m != nil && m.Type != "" {
		return m.Type
	}
	if m := vmi.Spec.Domain.Machine; m != nil {
		return m.Type
	}
	return ""
}

// hostModelSelector follows prepareNodeSelectorForHostCpuModel: a VMI that migrated before keeps
// the host-model keys its current pod already selects on; otherwise the source node's host-model
// CPU (host-model-cpu.node.kubevirt.io/<model>) becomes cpu-model-migration.node.kubevirt.io/<model>
// and each host-model-required-features.node.kubevirt.io/<f> becomes cpu-feature.node.kubevirt.io/<f>
// (getHostCpuModelFromMap). ok is false when neither is known: virt-controller then fails to create
// the target pod ("unable to locate host cpu model").
func hostModelSelector(source *corev1.Node, podSelector map[string]string) (map[string]string, bool) {
	out := map[string]string{}
	for k, v := range podSelector {
		if strings.Contains(k, kubevirtv1.CPUFeatureLabel) || strings.Contains(k, kubevirtv1.SupportedHostModelMigrationCPU) {
			out[k] = v
		}
	}
	if len(out) > 0 {
		return out, true
	}
	if source == nil {
		return nil, false
	}
	model, found := "", false
	for k, v := range source.Labels {
		if m, ok := strings.CutPrefix(k, kubevirtv1.HostModelCPULabel); ok {
			model, found = m, true
			out[kubevirtv1.SupportedHostModelMigrationCPU+model] = v
		}
		if f, ok := strings.CutPrefix(k, kubevirtv1.HostModelRequiredFeaturesLabel); ok {
			out[kubevirtv1.CPUFeatureLabel+f] = v
		}
	}
	if !found {
		return nil, false
	}
	return out, true
}

// VendorKey is getCPUVendorLabelKey: the first cpu-vendor.node.kubevirt.io/ key of labels.
func VendorKey(labels map[string]string) string {
	for k := range labels {
		if strings.HasPrefix(k, kubevirtv1.CPUModelVendorLabel) {
			return k
		}
	}
	return ""
}

// affinity is renderLaunchManifest's: the VMI's affinity, with a DoesNotExist requirement on
// node-labeller.kubevirt.io/obsolete-host-model for a host-model (or unset) CPU model and on
// cpu-feature.node.kubevirt.io/<f> per forbidden feature, added to every required term.
func affinity(vmi *kubevirtv1.VirtualMachineInstance) *corev1.Affinity {
	var reject []string
	cpu := vmi.Spec.Domain.CPU
	if cpu == nil || cpu.Model == "" || cpu.Model == kubevirtv1.CPUModeHostModel {
		reject = append(reject, kubevirtv1.NodeHostModelIsObsoleteLabel)
	}
	if cpu != nil {
		for _, f := range cpu.Features {
			if f.Policy == "forbid" {
				reject = append(reject, kubevirtv1.CPUFeatureLabel+f.Name)
			}
		}
	}
	return rejectLabels(vmi.Spec.Affinity, reject)
}

// rejectLabels is modifyNodeAffintyToRejectLabel for each key: a DoesNotExist requirement per key
// in every required term, or one term of them when there is none. It never modifies a (the
// informer cache's object): what it changes is copied, the rest shared.
func rejectLabels(a *corev1.Affinity, keys []string) *corev1.Affinity {
	if len(keys) == 0 {
		return a
	}
	// One allocation for the parts that change, another for the requirements of every term.
	out := &struct {
		affinity corev1.Affinity
		node     corev1.NodeAffinity
		required corev1.NodeSelector
		one      [1]corev1.NodeSelectorTerm
	}{}
	if a != nil {
		out.affinity = *a
		if a.NodeAffinity != nil {
			out.node = *a.NodeAffinity
		}
	}
	out.affinity.NodeAffinity = &out.node
	r := out.node.RequiredDuringSchedulingIgnoredDuringExecution
	var terms []corev1.NodeSelectorTerm
	if r != nil {
		terms = r.NodeSelectorTerms
	}
	n := len(keys)
	for _, t := range terms {
		n += len(t.MatchExpressions) + len(keys)
	}
	reqs := make([]corev1.NodeSelectorRequirement, 0, n)
	reject := func() []corev1.NodeSelectorRequirement {
		start := len(reqs)
		for _, k := range keys {
			reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpDoesNotExist})
		}
		return reqs[start:len(reqs):len(reqs)]
	}
	switch {
	case r == nil: // no required node affinity: one term of the rejections
		out.one[0] = corev1.NodeSelectorTerm{MatchExpressions: reject()}
		out.required.NodeSelectorTerms = out.one[:]
	case terms == nil:
	case len(terms) == 1:
		out.required.NodeSelectorTerms = out.one[:]
	default:
		out.required.NodeSelectorTerms = make([]corev1.NodeSelectorTerm, len(terms))
	}
	for i, t := range terms {
		start := len(reqs)
		reqs = append(reqs, t.MatchExpressions...)
		reject()
		t.MatchExpressions = reqs[start:len(reqs):len(reqs)]
		out.required.NodeSelectorTerms[i] = t
	}
	out.node.RequiredDuringSchedulingIgnoredDuringExecution = &out.required
	return &out.affinity
}

// notRendered lists what KubeVirt adds, or the VMI requires, that Render leaves out.
func notRendered(vmi *kubevirtv1.VirtualMachineInstance, kv *kubevirtv1.KubeVirt) []string {
	var out []string
	if a := vmi.Spec.Affinity; a != nil {
		if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, "the VMI's required pod affinity")
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, "the VMI's required pod anti-affinity")
		}
	}
	for _, t := range vmi.Spec.TopologySpreadConstraints {
		if t.WhenUnsatisfiable == corev1.DoNotSchedule {
			out = append(out, "the VMI's topology spread constraints")
			break
		}
	}
	if h := vmi.Status.TopologyHints; h != nil && h.TSCFrequency != nil && *h.TSCFrequency > 0 {
		out = append(out, "the TSC frequency label")
	}
	if f := vmi.Spec.Domain.Features; f != nil && f.Hyperv != nil && hypervStrict(kv) {
		out = append(out, "the Hyper-V feature labels (feature gate HypervStrictCheck)")
	}
	return out
}

func hypervStrict(kv *kubevirtv1.KubeVirt) bool {
	if kv == nil || kv.Spec.Configuration.DeveloperConfiguration == nil {
		return false
	}
	return slices.Contains(kv.Spec.Configuration.DeveloperConfiguration.FeatureGates, "HypervStrictCheck")
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// Map returns the node selector as a map.
func (c *Constraints) Map() map[string]string {
	m := make(map[string]string, len(c.Selector))
	for _, r := range c.Selector {
		m[r.Key] = r.Value
	}
	return m
}
