package migrationcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// The fixtures live in checktest, shared with the webhook's own tests.
const (
	testNS   = checktest.NS
	testVMI  = checktest.VMIName
	testHash = checktest.Hash
	testCN   = checktest.CN
	testNAD  = checktest.NAD
)

type nodeOpt = checktest.NodeOpt

var (
	withLabels    = checktest.WithLabels
	withoutLabel  = checktest.WithoutLabel
	notReady      = checktest.NotReady
	noConditions  = checktest.NoConditions
	cordoned      = checktest.Cordoned
	withTaint     = checktest.WithTaint
	node          = checktest.Node
	kubeVirt      = checktest.KubeVirt
	readyKubeVirt = checktest.ReadyKubeVirt
	readySnapshot = checktest.ReadySnapshot
	vmi           = checktest.VMI
	vmim          = checktest.VMIM
	postCopyVMI   = checktest.PostCopyVMI
)

// baseCreate is a create every rule admits: KubeVirt ready, network Ready, VMI on node-0, two
// other candidate nodes.
func baseCreate() CreateInput {
	return CreateInput{
		VMIM:        vmim("mig", testVMI, ""),
		VMI:         vmi("node-0", nil),
		KubeVirt:    readyKubeVirt(),
		Network:     readySnapshot(),
		CurrentHash: testHash,
		Nodes:       []*corev1.Node{node("node-0"), node("node-1"), node("node-2")},
		User:        "alice",
	}
}

// want is the expected shape of a Decision; msg lists substrings its Message must contain.
type want struct {
	rule  settings.Rule
	deny  bool
	field string
	msg   []string
}

func checkDecisions(t *testing.T, got []Decision, wants []want) {
	t.Helper()
	type shape struct {
		Rule        settings.Rule
		Deny, Warn  bool
		Field       string
		HasMessage  bool
		OnlyOneMode bool
	}
	var gs, ws []shape
	for _, d := range got {
		gs = append(gs, shape{d.Rule, d.Deny, d.Warn, d.Field, d.Message != "", d.Deny != d.Warn})
	}
	for _, w := range wants {
		ws = append(ws, shape{w.rule, w.deny, !w.deny, w.field, true, true})
	}
	if d := gocmp.Diff(ws, gs); d != "" {
		t.Fatalf("decisions (-want +got):\n%s\nall: %+v", d, got)
	}
	for i, w := range wants {
		for _, sub := range w.msg {
			if !strings.Contains(got[i].Message, sub) {
				t.Errorf("%s message %q does not contain %q", got[i].Rule, got[i].Message, sub)
			}
		}
	}
}

func deny(r settings.Rule, fld string, msg ...string) want { return want{r, true, fld, msg} }
func warn(r settings.Rule, fld string, msg ...string) want { return want{r, false, fld, msg} }

func policy(modes map[settings.Rule]settings.Mode, exempt ...string) *settings.MigrationPolicy {
	return &settings.MigrationPolicy{Rules: modes, ExemptUsers: exempt}
}

func allModes(m settings.Mode) map[settings.Rule]settings.Mode {
	out := map[settings.Rule]settings.Mode{}
	for _, r := range settings.RuleNames() {
		out[settings.Rule(r)] = m
	}
	return out
}

const (
	kvRule   = settings.RuleKubeVirtReady
	netRule  = settings.RuleNetworkReady
	tgtRule  = settings.RuleFeasibleTarget
	pathRule = settings.RulePathHealthy
	vmiRule  = settings.RuleVMIState
)

func TestEvaluateCreate(t *testing.T) {
	retry := "retry when the setting vm-migration-network is Ready"
	tests := []struct {
		name   string
		modify func(*CreateInput)
		want   []want
	}{
		{name: "all good", modify: func(*CreateInput) {}},
		{name: "nil policy enforces", modify: func(in *CreateInput) { in.KubeVirt = nil },
			want: []want{deny(kvRule, "", "no KubeVirt CR found", "retry when KubeVirt is ready")}},

		// 1. kubevirtReady
		{name: "KubeVirt missing", modify: func(in *CreateInput) { in.KubeVirt = nil },
			want: []want{deny(kvRule, "", "no KubeVirt CR found")}},
		{name: "KubeVirt update in progress", modify: func(in *CreateInput) {
			in.KubeVirt = kubeVirt(corev1.ConditionTrue, "UpdateInProgress", "Rolling virt-handler (2 of 3 updated)")
		}, want: []want{deny(kvRule, "", "UpdateInProgress", "Rolling virt-handler (2 of 3 updated)", "retry when KubeVirt is ready")}},
		{name: "KubeVirt not available", modify: func(in *CreateInput) {
			in.KubeVirt = kubeVirt(corev1.ConditionFalse, "DeploymentInProgress", "Deploying version v1.9.0")
		}, want: []want{deny(kvRule, "", "Available=False", "DeploymentInProgress", "Deploying version v1.9.0")}},
		{name: "KubeVirt without conditions", modify: func(in *CreateInput) { in.KubeVirt.Status.Conditions = nil },
			want: []want{deny(kvRule, "", "no Available condition")}},

		// 2. networkReady
		{name: "network not configured ignores the snapshot", modify: func(in *CreateInput) {
			in.CurrentHash, in.Network = "", &health.Snapshot{Reason: "NodesNotAttached"}
		}},
		{name: "network not configured, no snapshot", modify: func(in *CreateInput) { in.CurrentHash, in.Network = "", nil }},
		{name: "network configured, no snapshot", modify: func(in *CreateInput) { in.Network = nil },
			want: []want{deny(netRule, "", "not been observed", retry)}},
		{name: "stale snapshot", modify: func(in *CreateInput) { in.CurrentHash = "fedcba9876543210" },
			want: []want{deny(netRule, "", "hash fedcba9876", "last observed 0123456789", retry)}},
		{name: "not applied yet", modify: func(in *CreateInput) {
			in.Network.AppliedHash, in.Network.Attached, in.Network.Ready = "old", 1, false
		}, want: []want{deny(netRule, "", "1 of 3 virt-handlers are on the migration network", retry, "not applied")}},
		{name: "a node the migration does not touch is not attached: admitted", modify: func(in *CreateInput) {
			in.Network.Attached, in.Network.Ready, in.Network.Reason = 2, false, health.ReasonNodesNotAttached
			in.Network.NotAttached = map[string]string{"node-2": "NoClusterNetwork"}
		}},
		{name: "the source is not attached", modify: func(in *CreateInput) {
			in.Network.Attached, in.Network.Ready, in.Network.Reason = 2, false, health.ReasonNodesNotAttached
			in.Network.NotAttached = map[string]string{"node-0": "NotRolled"}
		}, want: []want{deny(netRule, "", "runs on node-0, whose virt-handler is not on the migration network "+testNAD+" (NotRolled; 2 of 3 virt-handlers are on the migration network "+testNAD+")",
			"retry when the setting vm-migration-network lists node-0 with an address")}},
		{name: "no attached target", modify: func(in *CreateInput) {
			in.Network.Attached, in.Network.Ready, in.Network.Reason = 1, false, health.ReasonNodesNotAttached
			in.Network.NotAttached = map[string]string{"node-1": "NotRolled", "node-2": "NotRolled"}
		}, want: []want{deny(tgtRule, "spec.vmiName", "0 of 3 nodes", "2 have no virt-handler on the migration network "+testNAD+" yet (NotRolled)", "lists another node with an address")}},
		{name: "not-attached nodes of an older value do not count", modify: func(in *CreateInput) {
			in.Network.NotAttached = map[string]string{"node-1": "NotRolled", "node-2": "NotRolled"}
			in.CurrentHash = "fedcba9876543210"
		}, want: []want{deny(netRule, "", "hash fedcba9876", retry)}},
		{name: "snapshot not Ready for another reason", modify: func(in *CreateInput) {
			in.Network.Ready, in.Network.Reason, in.Network.Message = false, "SomethingElse", "details here"
		}, want: []want{deny(netRule, "", "3 of 3", retry, "SomethingElse: details here")}},
		{name: "snapshot not Ready only because of KubeVirt is rule 1's business", modify: func(in *CreateInput) {
			in.Network.Ready, in.Network.Reason = false, health.ReasonKubeVirtNotReady
			in.KubeVirt = kubeVirt(corev1.ConditionFalse, "DeploymentInProgress", "")
		}, want: []want{deny(kvRule, "", "DeploymentInProgress")}},

		// 3. feasibleTarget
		{name: "conflicting selectors", modify: func(in *CreateInput) {
			in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd", "zone": "a", "gpu": "yes"}
			in.VMIM.Spec.AddedNodeSelector = map[string]string{"disk": "hdd", "zone": "b", "gpu": "yes"}
		}, want: []want{deny(tgtRule, fieldAddedNodeSelector, `key "disk" is "ssd" in the VMI's nodeSelector but "hdd" in spec.addedNodeSelector`,
			`key "zone" is "a"`, "no node can match both")}},
		{name: "only the source node matches", modify: func(in *CreateInput) {
			in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			in.Nodes[0].Labels["disk"] = "ssd"
		}, want: []want{deny(tgtRule, fieldVMIName, "0 of 3 nodes can take its target pod: 2 lack label disk=ssd (the VMI's nodeSelector), 1 is its source node node-0",
			"label another node to match the VMI's nodeSelector")}},
		// A pin by hostname names one node: the hint must not ask to label another node with it.
		{name: "pinned by hostname", modify: func(in *CreateInput) {
			in.VMI.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-0"}
			for _, n := range in.Nodes {
				n.Labels[corev1.LabelHostname] = n.Name
			}
		}, want: []want{deny(tgtRule, fieldVMIName, "2 lack label kubernetes.io/hostname=node-0 (the VMI's nodeSelector)",
			"the VMI's nodeSelector pins it to kubernetes.io/hostname=node-0, one node, so it cannot move: drop or change the pin")}},
		{name: "target pinned by hostname to the source", modify: func(in *CreateInput) {
			in.VMIM.Spec.AddedNodeSelector = map[string]string{corev1.LabelHostname: "node-0"}
			for _, n := range in.Nodes {
				n.Labels[corev1.LabelHostname] = n.Name
			}
		}, want: []want{deny(tgtRule, fieldAddedNodeSelector, "spec.addedNodeSelector pins the target to kubernetes.io/hostname=node-0, one node, and node-0 is the node the VMI runs on; name another node there")}},
		{name: "single-node cluster", modify: func(in *CreateInput) { in.Nodes = in.Nodes[:1] },
			want: []want{deny(tgtRule, fieldVMIName, "0 of 1 node can take its target pod: 1 is its source node node-0",
				"a migration never targets its source node: add a node")}},
		{name: "cordoned targets", modify: func(in *CreateInput) { cordoned(in.Nodes[1]); cordoned(in.Nodes[2]) },
			want: []want{deny(tgtRule, fieldVMIName, "2 are cordoned", "kubectl uncordon")}},
		{name: "cordoned targets, tolerated", modify: func(in *CreateInput) {
			cordoned(in.Nodes[1])
			in.VMI.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "unschedulable taint without the flag", modify: func(in *CreateInput) {
			withTaint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)(in.Nodes[1])
			withTaint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)(in.Nodes[2])
		}, want: []want{deny(tgtRule, fieldVMIName, "1 has taint node.kubernetes.io/unschedulable:NoSchedule that the VMI does not tolerate",
			"1 has taint node.kubernetes.io/unreachable:NoExecute")}},
		{name: "PreferNoSchedule taints do not count", modify: func(in *CreateInput) {
			withTaint(corev1.TaintNodeUnschedulable, corev1.TaintEffectPreferNoSchedule)(in.Nodes[1])
			withTaint("dedicated", corev1.TaintEffectNoSchedule)(in.Nodes[2])
		}},
		{name: "untolerated taints", modify: func(in *CreateInput) {
			withTaint("dedicated", corev1.TaintEffectNoSchedule)(in.Nodes[1])
			withTaint("dedicated", corev1.TaintEffectNoSchedule)(in.Nodes[2])
		}, want: []want{deny(tgtRule, fieldVMIName, "0 of 3 nodes can take its target pod: 2 have taint dedicated:NoSchedule that the VMI does not tolerate, 1 is its source node node-0",
			"kubectl taint node <node> dedicated:NoSchedule-", "spec.tolerations")}},
		{name: "tolerated taints", modify: func(in *CreateInput) {
			withTaint("dedicated", corev1.TaintEffectNoSchedule)(in.Nodes[1])
			withTaint("dedicated", corev1.TaintEffectNoSchedule)(in.Nodes[2])
			in.VMI.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}},
		{name: "not-ready nodes", modify: func(in *CreateInput) { notReady(in.Nodes[1]); noConditions(in.Nodes[2]) },
			want: []want{deny(tgtRule, fieldVMIName, "0 of 3 nodes can take its target pod: 2 are not Ready, 1 is its source node node-0; retry when another node is Ready")}},
		{name: "one candidate is enough", modify: func(in *CreateInput) { notReady(in.Nodes[1]) }},
		{name: "witness nodes", modify: func(in *CreateInput) {
			withLabels(settings.WitnessLabel, "")(in.Nodes[1])
			withLabels(settings.WitnessLabel, "true")(in.Nodes[2])
		}, want: []want{deny(tgtRule, fieldVMIName, "2 do not run virt-handler (a witness node)", "virt-handler, which receives migrations")}},
		{name: "KubeVirt workloads placement", modify: func(in *CreateInput) {
			in.KubeVirt.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{
				NodeSelector: map[string]string{"virt": "yes"}}}
			withLabels("virt", "yes")(in.Nodes[0])
		}, want: []want{deny(tgtRule, fieldVMIName, "2 do not run virt-handler", "{virt: yes}", "1 is its source node node-0")}},
		{name: "cluster network missing on the only candidate", modify: func(in *CreateInput) {
			in.Nodes = in.Nodes[:2]
			withoutLabel(settings.ClusterNetworkLabelPrefix + testCN)(in.Nodes[1])
		}, want: []want{deny(tgtRule, fieldVMIName, "0 of 2 nodes can take its target pod: 1 is its source node node-0, 1 does not carry the cluster network migration (label network.harvesterhci.io/migration=true)", "attach another node")}},
		{name: "cluster network ignored when not configured", modify: func(in *CreateInput) {
			in.CurrentHash, in.Network = "", nil
			withoutLabel(settings.ClusterNetworkLabelPrefix + testCN)(in.Nodes[1])
			withoutLabel(settings.ClusterNetworkLabelPrefix + testCN)(in.Nodes[2])
		}},
		{name: "cluster network of a stale snapshot is not applied", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{netRule: settings.ModeOff})
			in.CurrentHash = "fedcba9876543210"
			withoutLabel(settings.ClusterNetworkLabelPrefix + testCN)(in.Nodes[1])
			withoutLabel(settings.ClusterNetworkLabelPrefix + testCN)(in.Nodes[2])
		}},
		{name: "VMI nodeSelector matches nothing", modify: func(in *CreateInput) {
			in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}, want: []want{deny(tgtRule, fieldVMIName, "2 lack label disk=ssd (the VMI's nodeSelector)", "label another node")}},
		{name: "addedNodeSelector matches nothing", modify: func(in *CreateInput) {
			in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			in.VMIM.Spec.AddedNodeSelector = map[string]string{"disk": "ssd", "rack": "r9"}
			for _, n := range in.Nodes {
				withLabels("disk", "ssd")(n)
			}
		}, want: []want{deny(tgtRule, fieldAddedNodeSelector, "2 lack label rack=r9 (spec.addedNodeSelector)", "change spec.addedNodeSelector")}},
		{name: "addedNodeSelector narrows to a valid target", modify: func(in *CreateInput) {
			in.VMIM.Spec.AddedNodeSelector = map[string]string{"rack": "r2"}
			withLabels("rack", "r2")(in.Nodes[2])
		}},
		{name: "nil nodes are ignored", modify: func(in *CreateInput) { in.Nodes = []*corev1.Node{nil, in.Nodes[0], nil} },
			want: []want{deny(tgtRule, fieldVMIName, "0 of 1 node can take")}},
		{name: "VMI not scheduled yet", modify: func(in *CreateInput) { in.VMI.Status.NodeName = ""; in.Nodes = nil },
			want: []want{deny(tgtRule, fieldVMIName, "no node can receive VirtualMachineInstance ns/vm: 0 of 0 nodes can take its target pod;")}},

		// 4. vmiState
		{name: "VMI missing", modify: func(in *CreateInput) { in.VMI = nil },
			want: []want{deny(vmiRule, fieldVMIName, "VirtualMachineInstance ns/vm not found: create the VMI first or fix spec.vmiName")}},
		{name: "empty vmiName", modify: func(in *CreateInput) { in.VMI, in.VMIM.Spec.VMIName = nil, "" },
			want: []want{deny(vmiRule, fieldVMIName, "spec.vmiName is empty")}},
		{name: "migration in flight", modify: func(in *CreateInput) {
			in.OtherMigrations = []*kubevirtv1.VirtualMachineInstanceMigration{
				vmim("old-ok", testVMI, kubevirtv1.MigrationSucceeded), vmim("old-bad", testVMI, kubevirtv1.MigrationFailed),
				vmim("b-running", testVMI, kubevirtv1.MigrationRunning), vmim("a-new", testVMI, ""), nil,
			}
		}, want: []want{deny(vmiRule, fieldVMIName, "already has a migration in flight: VirtualMachineInstanceMigration a-new is Pending (and 1 more)",
			"wait until it has Succeeded or Failed")}},
		{name: "one migration in flight", modify: func(in *CreateInput) {
			in.OtherMigrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim("b-running", testVMI, kubevirtv1.MigrationRunning)}
		}, want: []want{deny(vmiRule, fieldVMIName, "VirtualMachineInstanceMigration b-running is Running; wait until")}},
		{name: "finished, unrelated and self migrations pass", modify: func(in *CreateInput) {
			other := vmim("elsewhere", testVMI, kubevirtv1.MigrationRunning)
			other.Namespace = "other"
			self := vmim("mig", testVMI, "")
			self.UID = ""
			in.OtherMigrations = []*kubevirtv1.VirtualMachineInstanceMigration{
				vmim("done", testVMI, kubevirtv1.MigrationSucceeded), vmim("other-vm", "vm2", kubevirtv1.MigrationRunning), other, self,
			}
		}},

		// policy
		{name: "exempt user skips rules 1-3 but not 4", modify: func(in *CreateInput) {
			in.Policy = policy(nil, "system:serviceaccount:harvester-system:evacuator")
			in.User = "system:serviceaccount:harvester-system:evacuator"
			in.KubeVirt, in.Network = nil, nil
			cordoned(in.Nodes[1])
			cordoned(in.Nodes[2])
			in.OtherMigrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim("running", testVMI, kubevirtv1.MigrationRunning)}
		}, want: []want{deny(vmiRule, fieldVMIName, "running is Running")}},
		{name: "non-exempt user is judged", modify: func(in *CreateInput) {
			in.Policy = policy(nil, "system:serviceaccount:harvester-system:evacuator")
			in.KubeVirt, in.Network = nil, nil
			cordoned(in.Nodes[1])
			cordoned(in.Nodes[2])
		}, want: []want{deny(kvRule, ""), deny(netRule, ""), deny(tgtRule, fieldVMIName, "2 are cordoned")}},
		{name: "exempt user still needs the VMI", modify: func(in *CreateInput) {
			in.Policy, in.User, in.VMI = policy(nil, "alice"), "alice", nil
		}, want: []want{deny(vmiRule, fieldVMIName, "not found")}},
		{name: "warn mode admits with warnings", modify: func(in *CreateInput) {
			in.Policy = policy(allModes(settings.ModeWarn))
			in.KubeVirt, in.Network = nil, nil
			notReady(in.Nodes[1])
			notReady(in.Nodes[2])
			in.OtherMigrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim("running", testVMI, kubevirtv1.MigrationRunning)}
		}, want: []want{warn(kvRule, ""), warn(netRule, ""), warn(tgtRule, fieldVMIName, "2 are not Ready"), warn(vmiRule, fieldVMIName, "running")}},
		{name: "mixed modes", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{kvRule: settings.ModeWarn, netRule: settings.ModeOff})
			in.KubeVirt, in.Network = nil, nil
		}, want: []want{warn(kvRule, "", "no KubeVirt CR found")}},
		{name: "off mode skips everything", modify: func(in *CreateInput) {
			in.Policy = policy(allModes(settings.ModeOff))
			in.KubeVirt, in.Network, in.VMI = nil, nil, nil
		}},
		{name: "missing VMI skips feasibleTarget", modify: func(in *CreateInput) { in.VMI, in.Nodes = nil, nil },
			want: []want{deny(vmiRule, fieldVMIName, "not found")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseCreate()
			tc.modify(&in)
			checkDecisions(t, EvaluateCreate(in), tc.want)
		})
	}
}

// TestFeasibleTargetMessage pins one full message: the node count per reason, most first, and the
// hint for the largest reason.
func TestFeasibleTargetMessage(t *testing.T) {
	in := baseCreate()
	in.Nodes = append(in.Nodes, node("node-3"))
	in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	notReady(in.Nodes[3])
	got := EvaluateCreate(in)
	wantMsg := "no node can receive VirtualMachineInstance ns/vm: 0 of 4 nodes can take its target pod: " +
		"2 lack label disk=ssd (the VMI's nodeSelector), 1 is its source node node-0, 1 is not Ready; " +
		"label another node to match the VMI's nodeSelector (not evaluated: room on the nodes (no pod cache))"
	if len(got) != 1 {
		t.Fatalf("got %d decisions, want 1: %+v", len(got), got)
	}
	if d := gocmp.Diff(wantMsg, got[0].Message); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}

	// No nodeSelector and no addedNodeSelector: those filters are not in force and not named,
	// though the set empties at a later one (KubeVirt's nodePlacement).
	in = baseCreate()
	in.KubeVirt = readyKubeVirt()
	in.KubeVirt.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: map[string]string{"virt": "yes"}}}
	got = EvaluateCreate(in)
	if len(got) != 1 || strings.Contains(got[0].Message, "lack label") || !strings.Contains(got[0].Message, "virt: yes") {
		t.Errorf("decisions %+v: want one naming KubeVirt's nodePlacement {virt: yes} and no selector filter that is not in force", got)
	}
}

func TestEvaluateCreateNoPanic(t *testing.T) {
	inputs := []CreateInput{
		{},
		{VMIM: &kubevirtv1.VirtualMachineInstanceMigration{}},
		{VMIM: &kubevirtv1.VirtualMachineInstanceMigration{}, VMI: &kubevirtv1.VirtualMachineInstance{}, CurrentHash: "x",
			Network: &health.Snapshot{}, KubeVirt: &kubevirtv1.KubeVirt{}, Nodes: []*corev1.Node{{}, nil},
			OtherMigrations: []*kubevirtv1.VirtualMachineInstanceMigration{{}, nil}},
	}
	for i, in := range inputs {
		got := EvaluateCreate(in)
		if i == 0 && got != nil {
			t.Errorf("nil VMIM: got %+v, want no decision", got)
		}
		if i > 0 && len(got) == 0 {
			t.Errorf("input %d: empty objects must be refused, got nothing", i)
		}
	}
}

func TestEvaluateDelete(t *testing.T) {
	const pc = settings.RulePostCopyCancel
	base := func() DeleteInput {
		return DeleteInput{VMIM: vmim("mig", testVMI, kubevirtv1.MigrationRunning), VMI: postCopyVMI("uid-mig")}
	}
	tests := []struct {
		name   string
		modify func(*DeleteInput)
		want   []want
	}{
		{name: "post-copy is refused", modify: func(*DeleteInput) {},
			want: []want{deny(pc, fieldForceCancel, "ns/mig is in post-copy", "target node node-1", "source node node-0", "loses the VM",
				"kubectl annotate vmim mig -n ns migranet.io/force-cancel=true")}},
		{name: "pre-copy may be cancelled", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.Mode = kubevirtv1.MigrationPreCopy }},
		{name: "paused may be cancelled", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.Mode = kubevirtv1.MigrationPaused }},
		{name: "completed post-copy", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.Completed = true }},
		{name: "failed post-copy", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.Failed = true }},
		{name: "finished VMIM", modify: func(in *DeleteInput) { in.VMIM.Status.Phase = kubevirtv1.MigrationSucceeded }},
		{name: "migrationUID names another VMIM", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.MigrationUID = "uid-other" }},
		{name: "migrationUID unset protects any VMIM of the VMI", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState.MigrationUID = "" },
			want: []want{deny(pc, fieldForceCancel, "loses the VM")}},
		{name: "force-cancel true", modify: func(in *DeleteInput) {
			in.VMIM.Annotations = map[string]string{settings.ForceCancelAnnotation: "true"}
		}},
		{name: "force-cancel false", modify: func(in *DeleteInput) {
			in.VMIM.Annotations = map[string]string{settings.ForceCancelAnnotation: "false"}
		}, want: []want{deny(pc, fieldForceCancel, `the annotation is "false"; only "true" forces`)}},
		{name: "force-cancel other spelling", modify: func(in *DeleteInput) {
			in.VMIM.Annotations = map[string]string{settings.ForceCancelAnnotation: "True"}
		}, want: []want{deny(pc, fieldForceCancel, `the annotation is "True"`)}},
		{name: "warn mode", modify: func(in *DeleteInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pc: settings.ModeWarn})
		}, want: []want{warn(pc, fieldForceCancel, "loses the VM")}},
		{name: "off mode", modify: func(in *DeleteInput) { in.Policy = policy(allModes(settings.ModeOff)) }},
		{name: "exemptUsers do not skip it", modify: func(in *DeleteInput) { in.Policy = policy(nil, "alice") },
			want: []want{deny(pc, fieldForceCancel)}},
		{name: "VMI missing", modify: func(in *DeleteInput) { in.VMI = nil }},
		{name: "VMI without migration state", modify: func(in *DeleteInput) { in.VMI.Status.MigrationState = nil }},
		{name: "VMI of another name", modify: func(in *DeleteInput) { in.VMIM.Spec.VMIName = "vm2" }},
		{name: "nil VMIM", modify: func(in *DeleteInput) { in.VMIM = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.modify(&in)
			checkDecisions(t, EvaluateDelete(in), tc.want)
		})
	}
}

// benchCreate builds a create with 1,000 nodes where only the last node can receive the VMI
// (feasible) or none can (infeasible: the last node lacks the cluster network too).
func benchCreate(feasible bool) CreateInput {
	in := baseCreate()
	in.VMI.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	in.VMIM.Spec.AddedNodeSelector = map[string]string{"rack": "r1"}
	in.KubeVirt.Spec.Workloads = &kubevirtv1.ComponentConfig{NodePlacement: &kubevirtv1.NodePlacement{
		NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"}}}
	in.Nodes = make([]*corev1.Node, 1000)
	for i := range in.Nodes {
		n := node(fmt.Sprintf("node-%d", i), withLabels("disk", "ssd", "rack", "r1", "kubevirt.io/schedulable", "true",
			"kubernetes.io/hostname", fmt.Sprintf("node-%d", i), "topology.kubernetes.io/zone", "z1"))
		if i != len(in.Nodes)-1 {
			delete(n.Labels, settings.ClusterNetworkLabelPrefix+testCN)
		} else if !feasible {
			delete(n.Labels, settings.ClusterNetworkLabelPrefix+testCN)
		}
		in.Nodes[i] = n
	}
	return in
}

func BenchmarkEvaluateCreate1000Nodes(b *testing.B) {
	for _, feasible := range []bool{true, false} {
		in := benchCreate(feasible)
		wantDecisions := 0
		if !feasible {
			wantDecisions = 1
		}
		b.Run(fmt.Sprintf("feasible=%v", feasible), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := EvaluateCreate(in); len(got) != wantDecisions {
					b.Fatalf("got %+v, want %d decisions", got, wantDecisions)
				}
			}
		})
	}
}

// TestTargetFilterAgreesWithSettings checks that the flattened virt-handler and cluster network
// filters judge nodes exactly as settings.Eligible and settings.HasClusterNetwork do.
func TestTargetFilterAgreesWithSettings(t *testing.T) {
	kvSel := map[string]string{"kubevirt.io/schedulable": "true", "zone": "a"}
	nodes := []*corev1.Node{
		node("plain"),
		node("selected", withLabels("kubevirt.io/schedulable", "true", "zone", "a")),
		node("wrong-zone", withLabels("kubevirt.io/schedulable", "true", "zone", "b")),
		node("half", withLabels("kubevirt.io/schedulable", "true")),
		node("witness", withLabels("kubevirt.io/schedulable", "true", "zone", "a", settings.WitnessLabel, "")),
		node("no-network", withLabels("kubevirt.io/schedulable", "true", "zone", "a"), withoutLabel(settings.ClusterNetworkLabelPrefix+testCN)),
		node("network-false", withLabels("kubevirt.io/schedulable", "true", "zone", "a", settings.ClusterNetworkLabelPrefix+testCN, "false")),
	}
	for _, sel := range []map[string]string{nil, kvSel} {
		f := target{kvSel: sel, kvLabels: flatten(sel), clusterNetwork: testCN, clusterNetworkLabel: settings.ClusterNetworkLabelPrefix + testCN}
		for _, n := range nodes {
			s := f.judge(n).stage
			if got, want := s > stageVirtHandler, settings.Eligible(n, sel); got != want {
				t.Errorf("selector %v, node %s: eligible %v, settings.Eligible %v", sel, n.Name, got, want)
			}
			if got, want := s == numStages, settings.Eligible(n, sel) && settings.HasClusterNetwork(n, testCN); got != want {
				t.Errorf("selector %v, node %s: feasible %v, want %v", sel, n.Name, got, want)
			}
		}
	}
}

// worstCase is make bench's hard admission case in process: 1,000 nodes behind the node index,
// the VMI with a nodeSelector, a toleration, a required node affinity and a virt-launcher pod in
// the pod cache, and every node but the last failing one constraint in turn (no selector label,
// cordoned, no added label, no cluster network, an untolerated taint, the affinity, no memory
// left).
func worstCase() CreateInput {
	in := baseCreate()
	in.VMI.UID = "vmi-uid"
	in.VMI.Spec.NodeSelector = map[string]string{"pool": "gold"}
	in.VMI.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vm", Effect: corev1.TaintEffectNoSchedule}}
	in.VMI.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}}}
	in.VMIM.Spec.AddedNodeSelector = map[string]string{"zone": "z1"}
	in.Nodes = make([]*corev1.Node, 1000)
	pods := []*corev1.Pod{launcher("node-0996", "1", "2Gi")}
	for i := range in.Nodes {
		opts := []nodeOpt{withLabels("pool", "gold", "zone", "z1", "rack", "r1"), allocatable("64", "256Gi", "110")}
		switch {
		case i == len(in.Nodes)-1:
			opts = append(opts, taint("dedicated", "vm", corev1.TaintEffectNoSchedule))
		case i%7 == 0:
			opts = append(opts, withoutLabel("pool"))
		case i%7 == 1:
			opts = append(opts, cordoned)
		case i%7 == 2:
			opts = append(opts, withoutLabel("zone"))
		case i%7 == 3:
			opts = append(opts, withoutLabel(settings.ClusterNetworkLabelPrefix+testCN))
		case i%7 == 4:
			opts = append(opts, taint("noisy", "", corev1.TaintEffectNoSchedule))
		case i%7 == 5:
			opts = append(opts, withLabels("rack", "r2"))
		default:
			pods = append(pods, other(fmt.Sprintf("filler-%d", i), fmt.Sprintf("node-%04d", i), "1", "256Gi"))
		}
		in.Nodes[i] = node(fmt.Sprintf("node-%04d", i), opts...)
	}
	in.VMI.Status.NodeName = "node-0996"
	pc := podCacheOf(pods...)
	in.Pods, in.index = pc, newNodeIndex(in.Nodes)
	in.index.bindPods(pc)
	return in
}

// BenchmarkEvaluateCreateWorstCase runs the rules alone on worstCase.
func BenchmarkEvaluateCreateWorstCase(b *testing.B) {
	in := worstCase()
	b.ReportAllocs()
	for b.Loop() {
		if got := EvaluateCreate(in); len(got) != 0 {
			b.Fatalf("got %+v, want admitted", got)
		}
	}
}

// BenchmarkEvaluateCreateWorstCaseCold is BenchmarkEvaluateCreateWorstCase with the CPU caches
// flushed before each call (a 32 MiB walk; cold-ns/create is the call alone), as in a server where TLS, decoding and other
// requests run between two migrations: what the rules cost when what they read is not cached.
func BenchmarkEvaluateCreateWorstCaseCold(b *testing.B) {
	in := worstCase()
	flush := make([]byte, 32<<20)
	b.ReportAllocs()
	var cold time.Duration
	for b.Loop() {
		for i := 0; i < len(flush); i += 64 {
			flush[i]++
		}
		start := time.Now()
		got := EvaluateCreate(in)
		cold += time.Since(start)
		if len(got) != 0 {
			b.Fatalf("got %+v, want admitted", got)
		}
	}
	b.ReportMetric(float64(cold.Nanoseconds())/float64(b.N), "cold-ns/create")
}

// TestEveryCreateRuleHasACheck: the fault it catches is a create rule added to the registry
// (settings/rules.go) without its check here, which would admit every migration under that rule.
func TestEveryCreateRuleHasACheck(t *testing.T) {
	in := baseCreate()
	for _, r := range settings.RulesOn(settings.OnCreate) {
		if _, ok := checkCreate(r, &in); !ok {
			t.Errorf("create rule %s has no check in checkCreate", r)
		}
	}
	if _, ok := checkCreate(settings.RulePostCopyCancel, &in); ok {
		t.Errorf("the cancel rule %s is checked on create", settings.RulePostCopyCancel)
	}
}
