package netcontroller

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// handlerPod builds a virt-handler pod on nodeName; networks is its networks annotation, ip its
// migration0 address ("" for no network-status).
func handlerPod(name, nodeName, networks, ip string, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubevirt", Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
	}
	if networks != "" {
		p.Annotations[settings.NetworksAnnotation] = networks
	}
	if ip != "" {
		p.Annotations["k8s.v1.cni.cncf.io/network-status"] = `[{"name":"pod","interface":"eth0","default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0","ips":["` + ip + `"]}]`
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestObserve(t *testing.T) {
	rng := netip.MustParsePrefix("192.168.100.0/24")
	witness := map[string]string{"node-role.harvesterhci.io/witness": "true"}
	deleting := handlerPod("h-old", "n1", "net-a@migration0", "192.168.100.9", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(0, 0)}
	cases := []struct {
		name string
		in   Input
		want Observation
	}{{
		name: "disabled: no per-node status, addresses still counted",
		in:   Input{Nodes: []*corev1.Node{node("n1", nil)}, Pods: []*corev1.Pod{handlerPod("h1", "n1", "", "", true)}},
		want: Observation{},
	}, {
		name: "every reason, sorted by node name",
		in: Input{
			Network: "net-a", Namespace: "kubevirt", Range: rng,
			Nodes: []*corev1.Node{node("n6", nil), node("n1", nil), node("n2", nil), node("n3", nil), node("n4", nil), node("n5", nil)},
			Pods: []*corev1.Pod{
				handlerPod("h1", "n1", "net-a@migration0", "192.168.100.2", true),
				handlerPod("h2", "n2", "net-old@migration0", "192.168.100.3", true),
				handlerPod("h3", "n3", "kubevirt/net-a@migration0", "", true),
				handlerPod("h4", "n4", "net-a@migration0", "10.0.0.4", true),
				handlerPod("h5", "n5", `[{"name":"net-a","namespace":"kubevirt","interface":"migration0"}]`, "192.168.100.5", false),
			},
		},
		want: Observation{Eligible: 6, Attached: 1, Used: 3, Nodes: []v1beta1.NodeMigrationStatus{
			{Name: "n1", IP: "192.168.100.2"},
			{Name: "n2", Reason: ReasonNotRolled},
			{Name: "n3", Reason: ReasonNoIP},
			{Name: "n4", IP: "10.0.0.4", Reason: ReasonOutOfRange},
			{Name: "n5", Reason: ReasonPodNotReady},
			{Name: "n6", Reason: ReasonNoPod},
		}},
	}, {
		name: "witness and non-matching nodes are not eligible; a terminating pod is ignored",
		in: Input{
			Network: "net-a", Namespace: "kubevirt", Range: rng, NodeSelector: map[string]string{"virt": "yes"},
			Nodes: []*corev1.Node{node("n1", map[string]string{"virt": "yes"}), node("w1", map[string]string{"virt": "yes", "node-role.harvesterhci.io/witness": "true"}), node("n2", nil), node("w2", witness)},
			Pods:  []*corev1.Pod{deleting, handlerPod("h-new", "n1", "net-a@migration0", "192.168.100.10", true)},
		},
		want: Observation{Eligible: 1, Attached: 1, Used: 1, Nodes: []v1beta1.NodeMigrationStatus{{Name: "n1", IP: "192.168.100.10"}}},
	}, {
		name: "during a rollout the pod on the current NAD wins over the old one",
		in: Input{
			Network: "net-a", Namespace: "kubevirt", Range: rng,
			Nodes: []*corev1.Node{node("n1", nil)},
			Pods:  []*corev1.Pod{handlerPod("h-old", "n1", "net-old@migration0", "192.168.100.20", true), handlerPod("h-new", "n1", "net-a@migration0", "192.168.100.21", true)},
		},
		want: Observation{Eligible: 1, Attached: 1, Used: 2, Nodes: []v1beta1.NodeMigrationStatus{{Name: "n1", IP: "192.168.100.21"}}},
	}, {
		name: "a NAD of the same name in another namespace does not count",
		in: Input{
			Network: "net-a", Namespace: "kubevirt", Range: rng,
			Nodes: []*corev1.Node{node("n1", nil)},
			Pods:  []*corev1.Pod{handlerPod("h1", "n1", "other/net-a@migration0", "192.168.100.2", true)},
		},
		want: Observation{Eligible: 1, Used: 1, Nodes: []v1beta1.NodeMigrationStatus{{Name: "n1", Reason: ReasonNotRolled}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Observe(tc.in)); diff != "" {
				t.Errorf("Observe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJudgeAndCapacity(t *testing.T) {
	ready := kubeVirt("True", settings.KubeVirtReadyReason)
	cases := []struct {
		name, value, applied string
		kvStatus, kvReason   string
		obs                  Observation
		wantReady            bool
		wantReason           string
	}{
		{"disabled and KubeVirt ready", "", "", "True", settings.KubeVirtReadyReason, Observation{}, true, ReasonPodNetwork},
		{"disabled, KubeVirt updating", "", "", "True", "UpdateInProgress", Observation{}, false, health.ReasonKubeVirtNotReady},
		{"invalid stored value", "{", "", "True", settings.KubeVirtReadyReason, Observation{}, false, ReasonInvalidValue},
		{"not applied yet", valueA, "", "True", settings.KubeVirtReadyReason, Observation{Eligible: 3, Attached: 3}, false, ReasonNotApplied},
		{"nodes still rolling", valueA, hashA, "True", settings.KubeVirtReadyReason, Observation{Eligible: 3, Attached: 2}, false, ReasonNodesNotAttached},
		{"attached but KubeVirt not available", valueA, hashA, "False", "DeploymentInProgress", Observation{Eligible: 3, Attached: 3}, false, health.ReasonKubeVirtNotReady},
		{"ready", valueA, hashA, "True", settings.KubeVirtReadyReason, Observation{Eligible: 3, Attached: 3}, true, ReasonReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1beta1.Setting{Value: tc.value, Status: v1beta1.SettingStatus{AppliedHash: tc.applied}}
			snap := judge(s, settings.EffectiveNetwork(s), kubeVirt(tc.kvStatus, tc.kvReason), tc.obs)
			if snap.Ready != tc.wantReady || snap.Reason != tc.wantReason {
				t.Errorf("judge = ready %v reason %q (%s), want %v %q", snap.Ready, snap.Reason, snap.Message, tc.wantReady, tc.wantReason)
			}
		})
	}
	if ok, _ := settings.KubeVirtReady(ready); !ok {
		t.Error("KubeVirtReady(Available/AllComponentsReady) = false")
	}
	if ok, why := settings.KubeVirtReady(nil); ok || why == "" {
		t.Errorf("KubeVirtReady(nil) = %v %q, want false with a reason", ok, why)
	}

	capCases := []struct {
		rng    string
		used   int64
		status metav1.ConditionStatus
		free   int64
	}{
		{"10.0.0.0/24", 3, metav1.ConditionTrue, 251},       // 254 usable
		{"10.0.0.0/24", 228, metav1.ConditionTrue, 26},      // 26 free is 10.2 % of 254
		{"10.0.0.0/24", 229, metav1.ConditionFalse, 25},     // 25 free is 9.8 %
		{"10.0.0.0/29", 4, metav1.ConditionTrue, 2},         // 6 usable, 2 free
		{"10.0.0.0/29", 5, metav1.ConditionFalse, 1},        // fewer than 2 free
		{"10.0.0.0/16", 60000, metav1.ConditionFalse, 5534}, // 65534 usable, 8.4 % free
	}
	for _, tc := range capCases {
		m := parse(t, `{"clusterNetwork":"migration","range":"`+tc.rng+`"}`)
		cond, c := capacityOf(m, Observation{Used: tc.used})
		if cond.Status != tc.status || c.Free != v1beta1.Count(strconv.FormatInt(tc.free, 10)) || c.Used != v1beta1.Count(strconv.FormatInt(tc.used, 10)) {
			t.Errorf("capacityOf(%s, used %d) = %s free %s, want %s free %d (%s)", tc.rng, tc.used, cond.Status, c.Free, tc.status, tc.free, cond.Message)
		}
	}
}

// TestJudgeNamesNodesNotAttached: the snapshot admission reads names every eligible node that is
// not attached, with its reason, so a migration is judged on its own nodes.
// Catches: a snapshot that only counts (every migration refused while one node is missing) or
// that names attached nodes too (migrations to them refused).
func TestJudgeNamesNodesNotAttached(t *testing.T) {
	s := &v1beta1.Setting{Value: valueA, Status: v1beta1.SettingStatus{AppliedHash: hashA}}
	obs := Observation{Eligible: 3, Attached: 1, Nodes: []v1beta1.NodeMigrationStatus{
		{Name: "n1", IP: "192.168.100.2"}, {Name: "n2", Reason: ReasonNoClusterNetwork}, {Name: "n3", Reason: ReasonNotRolled}}}
	snap := judge(s, settings.EffectiveOf(parse(t, valueA)), kubeVirt("True", settings.KubeVirtReadyReason), obs)
	want := map[string]string{"n2": ReasonNoClusterNetwork, "n3": ReasonNotRolled}
	if diff := cmp.Diff(want, snap.NotAttached); diff != "" {
		t.Errorf("NotAttached (-want +got):\n%s", diff)
	}
	obs = Observation{Eligible: 1, Attached: 1, Nodes: []v1beta1.NodeMigrationStatus{{Name: "n1", IP: "192.168.100.2"}}}
	if snap := judge(s, settings.EffectiveOf(parse(t, valueA)), kubeVirt("True", settings.KubeVirtReadyReason), obs); snap.NotAttached != nil {
		t.Errorf("all attached: NotAttached = %v, want nil", snap.NotAttached)
	}
}

// TestJudgeHarvesterMode: in Harvester mode the network in force is status.source's, under
// Harvester's NAD name; the setting's own value (refused by admission, here a stale invalid one)
// makes it neither invalid nor not applied.
// Catches: readiness judged from migranet's own value while Harvester's network is in force.
func TestJudgeHarvesterMode(t *testing.T) {
	m := parse(t, valueA)
	s := &v1beta1.Setting{Value: "{", Status: v1beta1.SettingStatus{AppliedHash: m.Hash(), Source: &v1beta1.NetworkSource{
		Kind: v1beta1.SourceHarvester, Setting: "settings.harvesterhci.io/vm-migration-network",
		NetworkAttachmentDefinition: "kubevirt/vm-migration-network-abcde", Value: valueA}}}
	snap := judge(s, settings.EffectiveNetwork(s), kubeVirt("True", settings.KubeVirtReadyReason), Observation{Eligible: 3, Attached: 3})
	if !snap.Ready || snap.Reason != ReasonReady || snap.Network != "vm-migration-network-abcde" {
		t.Errorf("judge = ready %v reason %q network %q (%s), want ready on vm-migration-network-abcde", snap.Ready, snap.Reason, snap.Network, snap.Message)
	}
}

// TestJudgeNotJudgedNetwork: with a NAD migranet does not judge in force (issue 52, item 1), the
// snapshot describes no network of migranet's (no hash, NAD or cluster network, so no rule judges
// a rollout or a node against it) and the Ready condition is Unknown, saying why; the near miss,
// the same setting whose own value was in force before, would otherwise read NodesNotAttached on
// the NAD that no longer exists once the virt-handlers rolled away.
// Catches: readiness judged from the setting's own value or a kept mirror while another network
// is in force.
func TestJudgeNotJudgedNetwork(t *testing.T) {
	m := parse(t, valueA)
	s := &v1beta1.Setting{Value: valueA, Status: v1beta1.SettingStatus{AppliedHash: m.Hash(), AppliedNetwork: "sriov-mig", Source: &v1beta1.NetworkSource{
		Kind: v1beta1.SourceHyperConverged, Setting: "hyperconvergeds.hco.kubevirt.io/kubevirt/kubevirt-hyperconverged",
		NetworkAttachmentDefinition: "kubevirt/sriov-mig", NotJudged: `spec.config.type "sriov"`}}}
	obs := Observation{Eligible: 3, Attached: 1, Nodes: []v1beta1.NodeMigrationStatus{{Name: "n1"}, {Name: "n2", Reason: ReasonNotRolled}, {Name: "n3", Reason: ReasonNotRolled}}}
	snap := judge(s, settings.EffectiveNetwork(s), kubeVirt("True", settings.KubeVirtReadyReason), obs)
	if !snap.Ready || snap.Reason != health.ReasonNetworkNotJudged || snap.Hash != "" || snap.Network != "" || snap.NotAttached != nil ||
		!strings.Contains(snap.Message, "kubevirt/sriov-mig") {
		t.Errorf("judge = %+v, want ready (nothing held up), reason %s, no hash, network or nodes not attached, naming the NAD", snap, health.ReasonNetworkNotJudged)
	}
	conds, _, capacity := statusOf(snap, nil, obs)
	if conds[0].Status != metav1.ConditionUnknown || conds[0].Reason != health.ReasonNetworkNotJudged || capacity != nil {
		t.Errorf("statusOf = %+v capacity %v, want Ready Unknown %s and no capacity", conds, capacity, health.ReasonNetworkNotJudged)
	}
}
