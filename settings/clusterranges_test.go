package settings

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// withPodCIDRs gives each node the pod range of its position in cidrs.
func withPodCIDRs(nodes []*corev1.Node, cidrs ...string) []*corev1.Node {
	for i, n := range nodes {
		n.Spec.PodCIDRs = []string{cidrs[i%len(cidrs)]}
	}
	return nodes
}

// The fault these catch: a migration range over the cluster's own pod or Service network stored
// and rolled out, taking virt-handler's pod traffic (or its API server's Service IP) off the pod
// network on every node.
func TestValidateAgainstClusterRanges(t *testing.T) {
	pods := &Cluster{Nodes: withPodCIDRs(attached("n", "migration", 3), "10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24")}
	legacy := &Cluster{Nodes: attached("n", "migration", 3)}
	legacy.Nodes[1].Spec.PodCIDR = "10.42.1.0/24"
	services := &Cluster{Nodes: attached("n", "migration", 3), ServiceRanges: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:96::/108")}}
	firstIP := &Cluster{Nodes: attached("n", "migration", 3), ServiceRanges: []netip.Prefix{netip.MustParsePrefix("10.43.0.1/32")}}
	many := &Cluster{Nodes: withPodCIDRs(attached("n", "migration", 8), "10.1.0.0/24", "10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24", "10.1.4.0/24", "10.1.5.0/24", "10.1.6.0/24", "10.1.7.0/24")}
	shared := &Cluster{Nodes: withPodCIDRs(attached("n", "migration", 3), "10.50.0.0/16")}
	handlers := &Cluster{Nodes: attached("n", "migration", 3), PodAddrs: []PodAddr{
		{Pod: "virt-handler-a", Node: "n-00", Addr: netip.MustParseAddr("10.244.0.7")},
		{Pod: "virt-handler-b", Node: "n-01", Addr: netip.MustParseAddr("10.244.1.9")},
		{Pod: "virt-handler-c", Addr: netip.MustParseAddr("fd00:244::9")}}}
	tests := []struct {
		name string
		raw  string
		cl   *Cluster
		errs []wantErr
	}{
		{name: "beside the pod ranges", raw: mn("migration", 1, "192.168.100.0/24", nil, ""), cl: pods},
		{name: "covers every pod range", raw: mn("migration", 1, "10.244.0.0/16", nil, ""), cl: pods,
			errs: []wantErr{inv("value.range", "10.244.0.0/24, the pod range of node n-00 (spec.podCIDRs)", "10.244.2.0/24", "pick a range outside them")}},
		{name: "inside one node's pod range", raw: mn("migration", 1, "10.244.1.128/25", nil, ""), cl: pods,
			errs: []wantErr{inv("value.range", "10.244.1.0/24, the pod range of node n-01")}},
		{name: "legacy spec.podCIDR", raw: mn("migration", 1, "10.42.0.0/16", nil, ""), cl: legacy,
			errs: []wantErr{inv("value.range", "10.42.1.0/24, the pod range of node n-01")}},
		{name: "one pod range on several nodes", raw: mn("migration", 1, "10.50.7.0/24", nil, ""), cl: shared,
			errs: []wantErr{inv("value.range", "10.50.0.0/16, the pod range of nodes n-00, n-01, n-02")}},
		{name: "inside the Service range", raw: mn("migration", 1, "10.96.100.0/24", nil, ""), cl: services,
			errs: []wantErr{inv("value.range", "10.96.0.0/16, the cluster's Service range")}},
		{name: "IPv6 Service range", raw: mn("migration", 1, "fd00:96::/64", nil, ""), cl: services,
			errs: []wantErr{inv("value.range", "fd00:96::/108")}},
		{name: "other family never overlaps", raw: mn("migration", 1, "fd00:100::/64", nil, ""), cl: pods},
		{name: "Service range known by its first address", raw: mn("migration", 1, "10.43.0.0/24", nil, ""), cl: firstIP,
			errs: []wantErr{inv("value.range", "10.43.0.1/32", "Service default/kubernetes")}},
		{name: "beside the first Service address", raw: mn("migration", 1, "10.43.1.0/24", nil, ""), cl: firstIP},
		{name: "at most five blocks named", raw: mn("migration", 1, "10.1.0.0/16", nil, ""), cl: many,
			errs: []wantErr{inv("value.range", "10.1.4.0/24", "and 3 more")}},
		{name: "over a virt-handler's pod address", raw: mn("migration", 1, "10.244.0.0/24", nil, ""), cl: handlers,
			errs: []wantErr{inv("value.range", "10.244.0.7/32, the pod network address of virt-handler-a on n-00 (status.podIPs)")}},
		{name: "over an IPv6 pod address of a pod not scheduled", raw: mn("migration", 1, "fd00:244::/64", nil, ""), cl: handlers,
			errs: []wantErr{inv("value.range", "fd00:244::9/128, the pod network address of virt-handler-c on no node")}},
		{name: "beside the virt-handlers' pod addresses", raw: mn("migration", 1, "10.244.2.0/24", nil, ""), cl: handlers},
		{name: "without the cluster: not judged", raw: mn("migration", 1, "10.244.0.0/16", nil, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMigrationNetwork(mustParse(t, tc.raw), tc.cl, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
		})
	}
}
