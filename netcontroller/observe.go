package netcontroller

import (
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons a node is not attached to the migration network.
const (
	ReasonNoPod       = "NoPod"
	ReasonNotRolled   = "NotRolled"
	ReasonNoIP        = "NoIP"
	ReasonOutOfRange  = "OutOfRange"
	ReasonPodNotReady = "PodNotReady"
	// ReasonNoClusterNetwork: the node does not carry the value's cluster network (no
	// network.harvesterhci.io/<cn>=true). Its virt-handler may still have a migration0 address —
	// the bridge CNI plugin creates a missing bridge — but on a bridge without uplink, so no
	// migration can leave or reach the node over it.
	ReasonNoClusterNetwork = "NoClusterNetwork"
)

// Input is what Observe looks at.
type Input struct {
	Nodes        []*corev1.Node
	NodeSelector map[string]string // KubeVirt CR spec.workloads.nodePlacement.nodeSelector
	Pods         []*corev1.Pod     // virt-handler pods in the KubeVirt namespace
	Network      string            // NAD name the setting renders to, "" when disabled
	Namespace    string            // KubeVirt namespace, where the NAD lives
	Range        netip.Prefix      // the setting's range (zero when disabled)
	// ClusterNetwork is the value's cluster network; "" skips the check that a node carries it.
	ClusterNetwork string
	// Addr is a pod's migration0 address (PodAddrs.Round); settings.PodMigrationAddr when nil.
	Addr func(*corev1.Pod) (netip.Addr, bool)
}

// addr is p's migration0 address, through in.Addr.
func (in Input) addr(p *corev1.Pod) (netip.Addr, bool) {
	if in.Addr == nil {
		return settings.PodMigrationAddr(p)
	}
	return in.Addr(p)
}

// Observation is how far the eligible nodes are on the migration network.
type Observation struct {
	Nodes    []v1beta1.NodeMigrationStatus // one per eligible node, sorted by name
	Eligible int
	Attached int
	// Used counts distinct addresses of the range held by virt-handler pods, on any node (the
	// controller adds those whereabouts held at its last read of the pool: checkPool).
	Used int64
}

// reportedAddrs are the distinct addresses of the range that virt-handler pods (scheduled, not
// terminating) report as their migration0 address.
func reportedAddrs(in Input) map[netip.Addr]bool {
	addrs := map[netip.Addr]bool{}
	if !in.Range.IsValid() {
		return addrs
	}
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		if ip, ok := in.addr(p); ok && in.Range.Contains(ip) {
			addrs[ip] = true
		}
	}
	return addrs
}

// Observe derives each eligible node's migration address, or why it has none, from its
// virt-handler pod: the pod must exist, not be terminating, ask for the current NAD as migration0,
// be ready, and report in its network-status a migration0 address inside the range.
func Observe(in Input) Observation {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	var obs Observation
	obs.Used = int64(len(reportedAddrs(in)))
	if in.Network == "" {
		return obs
	}
	for _, n := range in.Nodes {
		if !settings.Eligible(n, in.NodeSelector) {
			continue
		}
		st := nodeStatus(n.Name, byNode[n.Name], in)
		if st.Reason == "" && in.ClusterNetwork != "" && !settings.HasClusterNetwork(n, in.ClusterNetwork) {
			st.Reason = ReasonNoClusterNetwork
		}
		if st.Reason == "" {
			obs.Attached++
		}
		obs.Nodes = append(obs.Nodes, st)
	}
	obs.Eligible = len(obs.Nodes)
	sort.Slice(obs.Nodes, func(i, j int) bool { return obs.Nodes[i].Name < obs.Nodes[j].Name })
	return obs
}

// nodeStatus judges one node from its virt-handler pods, preferring one on the current NAD.
func nodeStatus(node string, pods []*corev1.Pod, in Input) v1beta1.NodeMigrationStatus {
	st := v1beta1.NodeMigrationStatus{Name: node, Reason: ReasonNoPod}
	for _, p := range pods {
		if !requestsNetwork(p, in.Namespace, in.Network) {
			st.Reason = ReasonNotRolled
			continue
		}
		if !settings.PodReady(p) {
			st.Reason = ReasonPodNotReady
			continue
		}
		ip, ok := in.addr(p)
		switch {
		case !ok:
			st.Reason = ReasonNoIP
		case !in.Range.Contains(ip):
			st.IP, st.Reason = ip.String(), ReasonOutOfRange
		default:
			return v1beta1.NodeMigrationStatus{Name: node, IP: ip.String()}
		}
	}
	return st
}

// requestsNetwork reports whether the pod asks Multus for namespace/name as migration0.
func requestsNetwork(p *corev1.Pod, namespace, name string) bool {
	return settings.PodMigrationNAD(p) == namespace+"/"+name
}
