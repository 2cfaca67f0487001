package migrationcheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// hostNode is a node labelled with its hostname, as every real node is (the checktest nodes are
// not, and so match no hostname pin).
func hostNode(name string, opts ...nodeOpt) *corev1.Node {
	return node(name, append([]nodeOpt{withLabels(corev1.LabelHostname, name)}, opts...)...)
}

// TestHarvesterPinDenial: the webhook's answer (EvaluateCreate, then Answer, as the validator
// calls them; walking the nodes and through the node index) to a migration pinned the way
// Harvester's migrate action pins it, spec.addedNodeSelector {kubernetes.io/hostname: <node>},
// to a node Harvester offers (docs/harvester.md: it reads neither Ready, nor other taints, nor the
// witness label, nor the migration network) and migranet refuses. Faults caught, each seen to
// fail once: the denial counting the nodes that lack the pinned hostname instead of naming the
// pinned node and its reason; its hint about the largest group ("retry when another node is
// Ready", "label another node") instead of the pin; the field spec.vmiName instead of
// spec.addedNodeSelector; no pointer to migranet preflight for the other nodes; the pinned node
// looked up by its name, where the scheduler matches its hostname label. A pin to a node
// migranet accepts stays admitted.
func TestHarvesterPinDenial(t *testing.T) {
	pin := func(in *CreateInput, host string) {
		in.VMIM.Spec.AddedNodeSelector = map[string]string{corev1.LabelHostname: host}
	}
	preflight := "; name another node there or drop the key (migranet preflight -n ns vm lists the nodes that can take it and why the others cannot)"
	tests := []struct {
		name string
		// node2 is the pinned node; the others are node-0 (the source), node-1, node-3, node-4.
		node2  *corev1.Node
		modify func(*CreateInput)
		// want is the refusal's text after "Forbidden: ", "" when admitted.
		want string
	}{
		{name: "not Ready", node2: hostNode("node-2", notReady),
			want: "migranet feasibleTarget: no node can receive VirtualMachineInstance ns/vm: spec.addedNodeSelector pins the target to " +
				"kubernetes.io/hostname=node-2, one node, and node-2 is not Ready" + preflight},
		{name: "without the cluster network", node2: hostNode("node-2", withoutLabel(settings.ClusterNetworkLabelPrefix+testCN)),
			want: "and node-2 does not carry the cluster network " + testCN + " (label " + settings.ClusterNetworkLabelPrefix + testCN + "=true)" + preflight},
		{name: "a witness node", node2: hostNode("node-2", withLabels(settings.WitnessLabel, "true")),
			want: "and node-2 does not run virt-handler (a witness node)" + preflight},
		{name: "a taint the VMI does not tolerate", node2: hostNode("node-2", withTaint("dedicated", corev1.TaintEffectNoSchedule)),
			want: "and node-2 has taint dedicated:NoSchedule that the VMI does not tolerate" + preflight},
		{name: "its virt-handler not on the migration network", node2: hostNode("node-2"),
			modify: func(in *CreateInput) { in.Network.NotAttached = map[string]string{"node-2": "NoIP"} },
			want:   "and node-2 has no virt-handler on the migration network " + testNAD + " yet (NoIP)" + preflight},
		{name: "Harvester pins the node's name; a node whose hostname label differs matches nothing",
			node2: node("node-2", withLabels(corev1.LabelHostname, "node-2.example")),
			want:  "pins the target to kubernetes.io/hostname=node-2, one node, and no node carries that label" + preflight},
		{name: "its migration path from the source fails (pathHealthy)", node2: hostNode("node-2"),
			modify: func(in *CreateInput) {
				in.Paths, in.Now = healthOf(report("node-0", failing("node-2", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"), report("node-3"), report("node-4")), checktest.Now
			},
			want: "migranet pathHealthy: no target with a healthy migration path from node-0: node-2: 9000-byte frames from node-0 to node-2 do not arrive" +
				" (largest that crossed: 1500); check the uplink MTU of both nodes and of the switch ports between them (kubectl get pathreports node-0 -o yaml)" +
				"; spec.addedNodeSelector pins the target to kubernetes.io/hostname=node-2, one node: name another node there or drop the key " +
				"(migranet preflight -n ns vm lists the nodes that can take it and why the others cannot)"},
		{name: "a node migranet accepts: admitted", node2: hostNode("node-2")},
	}
	for _, tc := range tests {
		for _, indexed := range []bool{false, true} {
			name := tc.name
			if indexed {
				name += ", indexed"
			}
			t.Run(name, func(t *testing.T) {
				in := baseCreate()
				in.Nodes = []*corev1.Node{hostNode("node-0"), hostNode("node-1"), tc.node2, hostNode("node-3"), hostNode("node-4")}
				in.Network = readySnapshot()
				pin(&in, "node-2")
				if tc.modify != nil {
					tc.modify(&in)
				}
				if indexed {
					in.index = newNodeIndex(in.Nodes)
				}
				_, err := Answer(in.VMIM, EvaluateCreate(in), false)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				if !apierrors.IsInvalid(err) {
					t.Fatalf("answer %v, want 422 Invalid", err)
				}
				causes := err.(apierrors.APIStatus).Status().Details.Causes
				if len(causes) != 1 || causes[0].Field != fieldAddedNodeSelector {
					t.Fatalf("causes %+v: want one, on %s (the pin is what to change)", causes, fieldAddedNodeSelector)
				}
				if !strings.Contains(err.Error(), "spec.addedNodeSelector: Forbidden: ") || !strings.Contains(causes[0].Message, tc.want) {
					t.Errorf("refusal\n  %s\ndoes not contain\n  %s", err, tc.want)
				}
				if strings.Contains(err.Error(), "lack label") {
					t.Errorf("refusal counts the nodes without the pinned hostname: %s", err)
				}
			})
		}
	}
}
