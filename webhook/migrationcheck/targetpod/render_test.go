package targetpod

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// sourceNode is a node as virt-handler v1.8.4's node labeller labels an Intel Haswell host (the
// labels createTargetPod reads: host-model CPU, host-model required features, CPU vendor).
func sourceNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
		"kubernetes.io/hostname":                                   "node-a",
		"kubevirt.io/schedulable":                                  "true",
		"cpu-model.node.kubevirt.io/Haswell":                       "true",
		"host-model-cpu.node.kubevirt.io/Haswell":                  "true",
		"host-model-required-features.node.kubevirt.io/vmx":        "true",
		"host-model-required-features.node.kubevirt.io/invtsc":     "true",
		"cpu-model-migration.node.kubevirt.io/Haswell":             "true",
		"cpu-vendor.node.kubevirt.io/Intel":                        "true",
		"machine-type.node.kubevirt.io/pc-q35-rhel9.6.0":           "true",
		"node-labeller.kubevirt.io/obsolete-host-model-not-a-key-": "x",
	}}}
}

// vmi is a running VMI as virt-api v1.8.4's defaults leave it: a host-model CPU and a q35 machine
// type, which virt-launcher resolves into status.machine.
func vmi(mod ...func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db-0", UID: "0b8c6b7e-uid"},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
			CPU:     &kubevirtv1.CPU{Model: kubevirtv1.CPUModeHostModel, Cores: 2},
			Machine: &kubevirtv1.Machine{Type: "q35"},
		}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "node-a", Machine: &kubevirtv1.Machine{Type: "pc-q35-rhel9.6.0"}},
	}
	for _, m := range mod {
		m(v)
	}
	return v
}

// defaults is the target pod's node selector for vmi() from sourceNode(): the host-model CPU
// and its required features, the machine type, the vendor.
func defaults() map[string]string {
	return map[string]string{
		"kubevirt.io/schedulable":                        "true",
		"machine-type.node.kubevirt.io/pc-q35-rhel9.6.0": "true",
		"cpu-model-migration.node.kubevirt.io/Haswell":   "true",
		"cpu-feature.node.kubevirt.io/vmx":               "true",
		"cpu-feature.node.kubevirt.io/invtsc":            "true",
		"cpu-vendor.node.kubevirt.io/Intel":              "true",
	}
}

// passthrough gives the VMI a host-passthrough CPU (no model labels) and no machine type.
func passthrough(v *kubevirtv1.VirtualMachineInstance) {
	v.Spec.Domain.CPU.Model = kubevirtv1.CPUModeHostPassthrough
	v.Status.Machine, v.Spec.Domain.Machine = nil, nil
}

func vmim(added map[string]string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "move"},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "db-0", AddedNodeSelector: added},
	}
}

func rejectTerm(keys ...string) corev1.NodeSelectorTerm {
	var t corev1.NodeSelectorTerm
	for _, k := range keys {
		t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	return t
}

func required(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

// TestRender pins the target pod's constraints against createTargetPod, renderLaunchManifest and
// the node selector renderer of KubeVirt v1.8.4, case by case. Faults caught: the added node
// selector overriding the VMI's (createTargetPod copies the rendered selector last); host-model
// labels taken from the source node after a migration (prepareNodeSelectorForHostCpuModel keeps the
// current pod's); the vendor label missing or doubled; forbidden features or the obsolete
// host-model term not added to every required term; a constraint dropped without a NotEvaluated.
func TestRender(t *testing.T) {
	obsolete := kubevirtv1.NodeHostModelIsObsoleteLabel
	tests := []struct {
		name         string
		in           Input
		selector     map[string]string
		affinity     *corev1.Affinity
		notEvaluated []string
	}{
		{
			name:     "defaults: host-model CPU from the source node, machine type from the status, vendor",
			in:       Input{VMI: vmi(), VMIM: vmim(nil), SourceNode: sourceNode()},
			selector: defaults(),
			affinity: required(rejectTerm(obsolete)),
		},
		{
			name: "migrated before: the current pod's host-model keys, not the source node's",
			in: Input{VMI: vmi(), VMIM: vmim(nil), SourceNode: sourceNode(), SourcePodSelector: map[string]string{
				"kubevirt.io/schedulable": "true", "cpu-model-migration.node.kubevirt.io/Broadwell": "true", "cpu-feature.node.kubevirt.io/pcid": "true",
				"cpu-vendor.node.kubevirt.io/Intel": "true", "zone": "old-added-selector",
			}},
			selector: map[string]string{
				"kubevirt.io/schedulable":                        "true",
				"machine-type.node.kubevirt.io/pc-q35-rhel9.6.0": "true",
				"cpu-model-migration.node.kubevirt.io/Broadwell": "true",
				"cpu-feature.node.kubevirt.io/pcid":              "true",
				"cpu-vendor.node.kubevirt.io/Intel":              "true",
			},
			affinity: required(rejectTerm(obsolete)),
		},
		{
			name: "named CPU model with required and forbidden features",
			in: Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.Domain.CPU = &kubevirtv1.CPU{Model: "Skylake-Client", Features: []kubevirtv1.CPUFeature{
					{Name: "avx512f"}, {Name: "pcid", Policy: "require"}, {Name: "svm", Policy: "forbid"}, {Name: "x2apic", Policy: "optional"},
				}}
				v.Status.Machine = nil
			}), VMIM: vmim(nil), SourceNode: sourceNode()},
			selector: map[string]string{
				"kubevirt.io/schedulable":                   "true",
				"machine-type.node.kubevirt.io/q35":         "true",
				"cpu-model.node.kubevirt.io/Skylake-Client": "true",
				"cpu-feature.node.kubevirt.io/avx512f":      "true",
				"cpu-feature.node.kubevirt.io/pcid":         "true",
				"cpu-vendor.node.kubevirt.io/Intel":         "true",
			},
			affinity: required(rejectTerm("cpu-feature.node.kubevirt.io/svm")),
		},
		{
			name:     "host-passthrough: no model label, no obsolete host-model term",
			in:       Input{VMI: vmi(passthrough), VMIM: vmim(nil), SourceNode: sourceNode()},
			selector: map[string]string{"kubevirt.io/schedulable": "true", "cpu-vendor.node.kubevirt.io/Intel": "true"},
		},
		{
			name: "the added node selector goes under the VMI's: a key both set keeps the VMI's value",
			in: Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.NodeSelector = map[string]string{"zone": "a"}
				v.Spec.Domain.CPU.Model = kubevirtv1.CPUModeHostPassthrough
			}), VMIM: vmim(map[string]string{"zone": "b", "rack": "r1"})},
			selector: map[string]string{
				"kubevirt.io/schedulable": "true", "machine-type.node.kubevirt.io/pc-q35-rhel9.6.0": "true", "zone": "a", "rack": "r1",
			},
		},
		{
			name: "the VMI's vendor label is kept and no other is added",
			in: Input{VMI: vmi(passthrough, func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.NodeSelector = map[string]string{"cpu-vendor.node.kubevirt.io/AMD": "true"}
			}), VMIM: vmim(nil), SourceNode: sourceNode()},
			selector: map[string]string{"kubevirt.io/schedulable": "true", "cpu-vendor.node.kubevirt.io/AMD": "true"},
		},
		{
			name: "architecture, cluster-wide selectors, dedicated CPUs, realtime",
			in: Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.Architecture = "AMD64"
				v.Spec.Domain.CPU = &kubevirtv1.CPU{Model: kubevirtv1.CPUModeHostPassthrough, DedicatedCPUPlacement: true, Realtime: &kubevirtv1.Realtime{}}
				v.Status.Machine = nil
				v.Spec.Domain.Machine = nil
			}), VMIM: vmim(nil), KubeVirt: &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{
				DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{NodeSelectors: map[string]string{"pool": "vms"}},
			}}}},
			selector: map[string]string{
				"kubevirt.io/schedulable": "true", "kubernetes.io/arch": "amd64", "pool": "vms",
				"kubevirt.io/cpumanager": "true", "kubevirt.io/realtime": "true",
			},
		},
		{
			name: "the VMI's required node affinity gets the DoesNotExist term in each of its terms",
			in: Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.Affinity = required(
					corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
					corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
				)
			}), VMIM: vmim(nil), SourceNode: sourceNode()},
			selector: defaults(),
			affinity: required(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}, {Key: obsolete, Operator: corev1.NodeSelectorOpDoesNotExist}}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}, {Key: obsolete, Operator: corev1.NodeSelectorOpDoesNotExist}}},
			),
		},
		{
			name: "a source node without a host-model CPU label: the host-model labels are not evaluated",
			in: Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Machine = nil; v.Spec.Domain.Machine = nil }),
				VMIM: vmim(nil), SourceNode: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}},
			selector:     map[string]string{"kubevirt.io/schedulable": "true"},
			affinity:     required(rejectTerm(obsolete)),
			notEvaluated: []string{"the host-model CPU labels (the source node's host-model-cpu.node.kubevirt.io/* label is not known)"},
		},
		{
			name: "what is not rendered is listed",
			in: Input{VMI: vmi(passthrough, func(v *kubevirtv1.VirtualMachineInstance) {
				v.Spec.Affinity = &corev1.Affinity{
					PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}},
					PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}},
				}
				v.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway},
					{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
				tsc := int64(2400000000)
				v.Status.TopologyHints = &kubevirtv1.TopologyHints{TSCFrequency: &tsc}
				v.Spec.Domain.Features = &kubevirtv1.Features{Hyperv: &kubevirtv1.FeatureHyperv{}}
			}), VMIM: vmim(nil), KubeVirt: &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{
				DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{FeatureGates: []string{"HypervStrictCheck"}},
			}}}},
			selector: map[string]string{"kubevirt.io/schedulable": "true"},
			affinity: &corev1.Affinity{
				PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}},
			},
			notEvaluated: []string{"the VMI's required pod affinity", "the VMI's required pod anti-affinity", "the VMI's topology spread constraints",
				"the TSC frequency label", "the Hyper-V feature labels (feature gate HypervStrictCheck)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Render(tc.in)
			if d := gocmp.Diff(tc.selector, c.Map()); d != "" {
				t.Errorf("node selector (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(tc.affinity, c.Affinity); d != "" {
				t.Errorf("affinity (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(tc.notEvaluated, c.NotEvaluated); d != "" {
				t.Errorf("not evaluated (-want +got):\n%s", d)
			}
			if c.AntiAffinityUID != tc.in.VMI.UID {
				t.Errorf("anti-affinity to %q, want the VMI's UID %q", c.AntiAffinityUID, tc.in.VMI.UID)
			}
		})
	}
}

// TestRenderKeepsTheVMI checks that rendering copies, never edits, the VMI's affinity (the
// informer cache's object is shared). Fault caught: appending the DoesNotExist term in place.
func TestRenderKeepsTheVMI(t *testing.T) {
	v := vmi(func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Affinity = required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}})
		v.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	})
	before := v.DeepCopy()
	c := Render(Input{VMI: v, VMIM: vmim(map[string]string{"rack": "r1"}), SourceNode: sourceNode()})
	if d := gocmp.Diff(before, v); d != "" {
		t.Errorf("Render changed the VMI (-before +after):\n%s", d)
	}
	if d := gocmp.Diff(v.Spec.Tolerations, c.Tolerations); d != "" {
		t.Errorf("tolerations (-vmi +target):\n%s", d)
	}
}

// TestSelectorOrder checks the order a denial blames keys in: KubeVirt's schedulable mark first,
// then the VMI's nodeSelector, spec.addedNodeSelector, then the CPU's.
func TestSelectorOrder(t *testing.T) {
	c := Render(Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.NodeSelector = map[string]string{"zone": "a"} }),
		VMIM: vmim(map[string]string{"rack": "r1"}), SourceNode: sourceNode()})
	var got []string
	for _, r := range c.Selector {
		got = append(got, r.Key)
	}
	want := []string{"kubevirt.io/schedulable", "zone", "rack", "cpu-feature.node.kubevirt.io/invtsc", "cpu-feature.node.kubevirt.io/vmx",
		"cpu-model-migration.node.kubevirt.io/Haswell", "cpu-vendor.node.kubevirt.io/Intel", "machine-type.node.kubevirt.io/pc-q35-rhel9.6.0"}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

// TestRejectLabels pins modifyNodeAffintyToRejectLabel's result for every shape of affinity, and
// that the VMI's affinity is never changed nor shared where the result differs. Faults caught: a
// missing required affinity not given a term of its own, nil and empty terms told apart wrongly (a
// term added to none), a term's requirements appended in place, a term left out.
func TestRejectLabels(t *testing.T) {
	exists := func(k string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpExists}
	}
	absent := func(k string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpDoesNotExist}
	}
	field := []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}
	pods := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{exists("ssd")}}}}
	withRequired := func(terms []corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	tests := []struct {
		name string
		in   *corev1.Affinity
		keys []string
		want *corev1.Affinity
	}{
		{"no keys", withRequired([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a")}}}), nil,
			withRequired([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a")}}})},
		{"no affinity", nil, []string{"x", "y"}, withRequired([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{absent("x"), absent("y")}}})},
		{"pod affinity and preferred terms only", &corev1.Affinity{PodAffinity: pods, NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			[]string{"x"}, &corev1.Affinity{PodAffinity: pods, NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{absent("x")}}}}}}},
		{"required with nil terms", withRequired(nil), []string{"x"}, withRequired(nil)},
		{"required with no terms", withRequired([]corev1.NodeSelectorTerm{}), []string{"x"}, withRequired([]corev1.NodeSelectorTerm{})},
		{"one term", withRequired([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a")}}}), []string{"x"},
			withRequired([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a"), absent("x")}}})},
		{"three terms, one of fields only, one empty", withRequired([]corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a"), exists("b")}}, {MatchFields: field}, {}}), []string{"x", "y"},
			withRequired([]corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{exists("a"), exists("b"), absent("x"), absent("y")}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{absent("x"), absent("y")}, MatchFields: field},
				{MatchExpressions: []corev1.NodeSelectorRequirement{absent("x"), absent("y")}}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.Affinity
			if tc.in != nil {
				before = tc.in.DeepCopy()
			}
			got := rejectLabels(tc.in, tc.keys)
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if d := gocmp.Diff(before, tc.in); d != "" {
				t.Errorf("the input changed (-before +after):\n%s", d)
			}
			if len(tc.keys) == 0 || got == nil || got.NodeAffinity == nil || got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				return
			}
			// Growing a result term must not write into the input's or another term's requirements.
			terms := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			for i := range terms {
				terms[i].MatchExpressions = append(terms[i].MatchExpressions, exists("grown"))
			}
			if d := gocmp.Diff(before, tc.in); d != "" {
				t.Errorf("growing the result changed the input (-before +after):\n%s", d)
			}
			for i := range terms {
				if n := len(terms[i].MatchExpressions); n < 1 || terms[i].MatchExpressions[n-1].Key != "grown" {
					t.Errorf("term %d: growing another term overwrote it", i)
				}
				for _, r := range terms[i].MatchExpressions[:len(terms[i].MatchExpressions)-1] {
					if r.Key == "grown" {
						t.Errorf("term %d: growing another term wrote into it", i)
					}
				}
			}
		})
	}
}

// TestSelectorKeysAreUnique checks that a key set twice is required once, with the value that
// wins in virt-controller's node selector map: the VMI's nodeSelector over the KubeVirt CR's
// developerConfiguration.nodeSelectors, the rendered selector over spec.addedNodeSelector. Fault
// caught: a later set appended beside the earlier one (a requirement no node can meet).
func TestSelectorKeysAreUnique(t *testing.T) {
	kv := &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{
		DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{NodeSelectors: map[string]string{"zone": "from-kubevirt", "tier": "gold"}}}}}
	c := Render(Input{VMI: vmi(func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.NodeSelector = map[string]string{"zone": "from-vmi"}
	}),
		VMIM: vmim(map[string]string{"zone": "from-migration", "tier": "silver", "rack": "r1"}), KubeVirt: kv, SourceNode: sourceNode()})
	got := map[string][]Requirement{}
	for _, r := range c.Selector {
		got[r.Key] = append(got[r.Key], r)
	}
	for key, want := range map[string]Requirement{
		"zone": {Key: "zone", Value: "from-vmi", Why: "the VMI's nodeSelector"},
		"tier": {Key: "tier", Value: "gold", Why: "the KubeVirt CR's developerConfiguration.nodeSelectors"},
		"rack": {Key: "rack", Value: "r1", Why: "spec.addedNodeSelector"},
	} {
		if d := gocmp.Diff([]Requirement{want}, got[key]); d != "" {
			t.Errorf("%s (-want +got):\n%s", key, d)
		}
	}
}
