package settings

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Node labels the migration network depends on.
const (
	// ClusterNetworkLabelPrefix + <cluster network> = "true" marks a node attached to that
	// Harvester cluster network.
	ClusterNetworkLabelPrefix = "network.harvesterhci.io/"
	// WitnessLabel marks a Harvester witness node; witness nodes run no virt-handler.
	WitnessLabel = "node-role.harvesterhci.io/witness"
)

// maxListedNodes bounds how many node names an error message lists.
const maxListedNodes = 10

// Cluster is what the cluster-dependent checks look at.
type Cluster struct {
	// Nodes of the cluster; nil entries are ignored.
	Nodes []*corev1.Node
	// NodeSelector is the KubeVirt CR's spec.workloads.nodePlacement.nodeSelector (nil when unset):
	// virt-handler runs only on nodes carrying all of these labels.
	NodeSelector map[string]string
	// ServiceRanges are the cluster's Service IP ranges (ServiceRanges), PodAddrs the
	// virt-handlers' pod-network addresses (VirtHandlerAddrs); the nodes' pod ranges are read from
	// Nodes. A migration range may overlap none of them.
	ServiceRanges []netip.Prefix
	PodAddrs      []PodAddr
	// Migrations are the KubeVirt CR's migration limits a budget is judged against
	// (MigrationLimitsOf; KubeVirt's defaults when there is no CR).
	Migrations MigrationLimits
}

// migrationLimits is cl's, KubeVirt's defaults for a nil cl or unset limits.
func (cl *Cluster) migrationLimits() MigrationLimits {
	if cl == nil || cl.Migrations == (MigrationLimits{}) {
		return MigrationLimitsOf(nil)
	}
	return cl.Migrations
}

// ClusterOf is the Cluster the checks of a vm-migration-network value (and a migration-policy's
// budget) judge against: nodes, the node selector and migration limits of kv, the KubeVirt CR in force (nil: none), the Service ranges and the
// virt-handlers' pod addresses. The setting webhook and the settings controller both derive it
// here, so a stored value is judged alike by both.
func ClusterOf(nodes []*corev1.Node, kv *kubevirtv1.KubeVirt, services []netip.Prefix, pods []PodAddr) *Cluster {
	return &Cluster{Nodes: nodes, NodeSelector: WorkloadsNodeSelector(kv), ServiceRanges: services, PodAddrs: pods, Migrations: MigrationLimitsOf(kv)}
}

// Eligible reports whether node runs virt-handler and so needs a migration address: it is not a
// witness node (label WitnessLabel present, whatever its value) and carries every label of
// nodeSelector with the same value.
func Eligible(node *corev1.Node, nodeSelector map[string]string) bool {
	if node == nil {
		return false
	}
	if _, witness := node.Labels[WitnessLabel]; witness {
		return false
	}
	for k, v := range nodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// HasClusterNetwork reports whether node is attached to clusterNetwork (label
// network.harvesterhci.io/<clusterNetwork>: "true").
func HasClusterNetwork(node *corev1.Node, clusterNetwork string) bool {
	if node == nil || clusterNetwork == "" {
		return false
	}
	var buf [64]byte // the label key, built without an allocation (admission asks on every review)
	key := append(append(buf[:0], ClusterNetworkLabelPrefix...), clusterNetwork...)
	return node.Labels[string(key)] == "true"
}

// EligibleNodes returns the names of cl's eligible nodes, sorted.
func (cl *Cluster) EligibleNodes() []string {
	if cl == nil {
		return nil
	}
	var names []string
	for _, n := range cl.Nodes {
		if Eligible(n, cl.NodeSelector) {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	return names
}

// missingClusterNetwork returns the sorted names of eligible nodes without clusterNetwork and the
// number of eligible nodes.
func (cl *Cluster) missingClusterNetwork(clusterNetwork string) (missing []string, eligible int) {
	for _, n := range cl.Nodes {
		if !Eligible(n, cl.NodeSelector) {
			continue
		}
		eligible++
		if !HasClusterNetwork(n, clusterNetwork) {
			missing = append(missing, n.Name)
		}
	}
	slices.Sort(missing)
	return missing, eligible
}

// listNodes renders names as "a, b, c" with at most maxListedNodes names, then "and N more".
func listNodes(names []string) string {
	if len(names) <= maxListedNodes {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListedNodes], ", "), len(names)-maxListedNodes)
}
