package migrationcheck

import (
	"strings"
	"testing"

	"github.com/migranet/migranet/settings"
)

// TestSourceOnClusterNetwork: a migration leaves its source over the source node's migration0,
// which reaches other nodes only through the cluster network's uplink; on a node that does not
// carry the cluster network (Harvester's agent removed the label when it tore the uplink down)
// the bridge plugin still made migration0, on a bridge without uplink, so the virt-handler has an
// address. The network controller counts the node as not attached (NoClusterNetwork), so the
// network is not Ready; networkReady names the source's own problem first. The virt-handler
// stand-in fails such a migration (test/sim MigrationPath).
// Catches: admitting a migration whose source cannot send it (migranet judged only targets).
func TestSourceOnClusterNetwork(t *testing.T) {
	offSource := func(in *CreateInput) { delete(in.Nodes[0].Labels, settings.ClusterNetworkLabelPrefix+testCN) }
	cases := []struct {
		name   string
		modify func(*CreateInput)
		want   []want
	}{
		{"source carries the cluster network", func(*CreateInput) {}, nil},
		{"source does not carry it", offSource, []want{{rule: settings.RuleNetworkReady, deny: true, msg: []string{
			"VirtualMachineInstance ns/vm runs on node-0, which does not carry the cluster network migration (label network.harvesterhci.io/migration=true)",
			"no uplink", "attach node-0 to the cluster network migration"}}}},
		{"as the network controller reports it: the source not attached (NoClusterNetwork), its own reason first", func(in *CreateInput) {
			offSource(in)
			in.Network.Attached, in.Network.Ready, in.Network.Reason = 2, false, "NodesNotAttached"
		}, []want{{rule: settings.RuleNetworkReady, deny: true, msg: []string{"runs on node-0, which does not carry"}}}},
		{"label false counts as not carried", func(in *CreateInput) { in.Nodes[0].Labels[settings.ClusterNetworkLabelPrefix+testCN] = "false" },
			[]want{{rule: settings.RuleNetworkReady, deny: true, msg: []string{"runs on node-0, which does not carry"}}}},
		{"pod network: no cluster network to carry", func(in *CreateInput) { offSource(in); in.CurrentHash, in.Network = "", nil }, nil},
		{"snapshot of an older value: the rollout message alone", func(in *CreateInput) { offSource(in); in.Network.Hash = "older" },
			[]want{{rule: settings.RuleNetworkReady, deny: true, msg: []string{"has not been observed yet"}}}},
		{"source node not in the cache: nothing to judge", func(in *CreateInput) { offSource(in); in.VMI.Status.NodeName = "gone" }, nil},
		{"VMI not scheduled yet", func(in *CreateInput) { offSource(in); in.VMI.Status.NodeName = "" }, nil},
		{"warn mode", func(in *CreateInput) {
			offSource(in)
			in.Policy = &settings.MigrationPolicy{Rules: map[settings.Rule]settings.Mode{settings.RuleNetworkReady: settings.ModeWarn}}
		}, []want{{rule: settings.RuleNetworkReady, msg: []string{"does not carry"}}}},
		{"exempt user", func(in *CreateInput) {
			offSource(in)
			in.Policy = &settings.MigrationPolicy{ExemptUsers: []string{"alice"}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := baseCreate()
			tc.modify(&in)
			got := EvaluateCreate(in)
			checkDecisions(t, got, tc.want)
			for _, d := range got {
				if strings.Contains(d.Message, "does not carry") && d.Field != "" {
					t.Errorf("the source's network is the cluster's state, not a field: %q", d.Field)
				}
			}
		})
	}
}
