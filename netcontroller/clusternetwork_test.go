package netcontroller

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
)

// TestObserveClusterNetwork: a node that does not carry the value's cluster network is not
// attached, whatever address its virt-handler reports. The bridge CNI plugin (containernetworking/
// plugins v1.9.1 plugins/main/bridge/bridge.go ensureBridge) creates a missing <cn>-br, so that
// virt-handler gets its migration0 address from whereabouts, on a bridge without uplink: no
// migration leaves or reaches the node over it (Harvester's agent labels a node
// network.harvesterhci.io/<cn>=true only once the uplink is set up, and removes the label when it
// tears it down).
// Catches: a network reported Ready (and migrations admitted) while a node's migration0 is cut
// off, where the virt-handler stand-in fails every migration from or to that node.
func TestObserveClusterNetwork(t *testing.T) {
	const nad, ns = "vm-migration-network-0123456789", "kubevirt"
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	pod := func(name, node, ip string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{settings.VirtHandlerLabel: settings.VirtHandlerValue},
				Annotations: map[string]string{
					settings.NetworksAnnotation:         nad + "@" + settings.MigrationInterface,
					"k8s.v1.cni.cncf.io/network-status": `[{"name":"kubevirt/` + nad + `","interface":"migration0","ips":["` + ip + `"]}]`,
				}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	carries := map[string]string{settings.ClusterNetworkLabelPrefix + "migration": "true"}
	cases := []struct {
		name           string
		labels         map[string]string
		clusterNetwork string
		wantReason     string
	}{
		{"carries the cluster network", carries, "migration", ""},
		{"no label", map[string]string{}, "migration", ReasonNoClusterNetwork},
		{"label false", map[string]string{settings.ClusterNetworkLabelPrefix + "migration": "false"}, "migration", ReasonNoClusterNetwork},
		{"another cluster network only", map[string]string{settings.ClusterNetworkLabelPrefix + "mgmt": "true"}, "migration", ReasonNoClusterNetwork},
		{"no cluster network given: not checked", map[string]string{}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := Observe(Input{
				Nodes:     []*corev1.Node{node("n1", carries), node("n2", tc.labels)},
				Pods:      []*corev1.Pod{pod("h1", "n1", "192.168.100.2"), pod("h2", "n2", "192.168.100.3")},
				Network:   nad,
				Namespace: ns,
				Range:     netip.MustParsePrefix("192.168.100.0/24"), ClusterNetwork: tc.clusterNetwork,
			})
			wantAttached := 2
			if tc.wantReason != "" {
				wantAttached = 1
			}
			if obs.Eligible != 2 || obs.Attached != wantAttached {
				t.Fatalf("eligible %d attached %d, want 2 and %d", obs.Eligible, obs.Attached, wantAttached)
			}
			got := obs.Nodes[1]
			if got.Name != "n2" || got.Reason != tc.wantReason || got.IP != "192.168.100.3" {
				t.Fatalf("node status %+v, want reason %q with its address kept", got, tc.wantReason)
			}
		})
	}
}
