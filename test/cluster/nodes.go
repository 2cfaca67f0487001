package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
)

// DefaultClusterNetwork is the cluster network the local cluster's nodes carry besides mgmt.
const DefaultClusterNetwork = "migration"

// NodeSpec describes a kwok node to create.
type NodeSpec struct {
	Name string
	// ClusterNetworks the node carries; "mgmt" is always added, as on every Harvester node.
	ClusterNetworks []string
	// Witness makes a witness node: labelled as such and tainted like an etcd-only RKE2 node,
	// so DaemonSets without a matching toleration (virt-handler) do not run there.
	Witness bool
	// Labels are extra labels.
	Labels map[string]string
	// Unschedulable cordons the node.
	Unschedulable bool
	// Taints are extra taints.
	Taints []corev1.Taint
	// UplinkMTU is the MTU of the uplink of every cluster network the node carries, "mgmt"
	// aside (see UplinkMTUAnnotationPrefix); 0 gives DefaultUplinkMTU.
	UplinkMTU int
}

// UplinkMTUAnnotationPrefix + <cluster network> on a Node is the MTU of that cluster network's
// uplink bond (<cn>-bo) on the node, which the Multus simulator and the virt-handler stand-in
// read. On Harvester it is spec.uplink.linkAttributes.mtu of the VlanConfig the node matches
// (label network.harvesterhci.io/vlanconfig), which the node's agent sets on the bond (setUplink,
// network-controller-harvester v1.8.2 pkg/controller/agent/vlanconfig/controller.go); it lives in
// the node's kernel and no Kubernetes object reports it per node. Absent: 1500, the bond's
// default when the VlanConfig sets none.
const UplinkMTUAnnotationPrefix = "uplink-mtu.sim.migranet.io/"

// LabNIC is the network interface every node of a local cluster has on the lab switch, with the
// same name everywhere and enslaved to nothing: what a macvlan value names as its master (an
// OpenShift node's spare NIC). Its MTU is the node annotation NICMTUAnnotationPrefix+LabNIC.
const LabNIC = "ens5"

// NICMTUAnnotationPrefix + <interface> on a Node is the MTU of that NIC (LabNIC), which the node
// network agent stand-in sets (sim.HarvesterAgent); absent: 1500. NodeObject writes the node's
// UplinkMTU there too.
const NICMTUAnnotationPrefix = "nic-mtu.sim.migranet.io/"

// DefaultUplinkMTU is the uplink MTU of the environment's nodes: jumbo frames, as a dedicated
// migration network is usually built (and Harvester's maximum, utils.MaxMTU).
const DefaultUplinkMTU = 9000

// DefaultNodes returns n nodes named node-1..node-n carrying the default cluster network.
func DefaultNodes(n int) []NodeSpec {
	out := make([]NodeSpec, n)
	for i := range out {
		out[i] = NodeSpec{Name: fmt.Sprintf("node-%d", i+1), ClusterNetworks: []string{DefaultClusterNetwork}}
	}
	return out
}

// NodeObject renders a kwok-managed Node with what KubeVirt's scheduling and Harvester's network
// labels need.
func NodeObject(s NodeSpec) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": s.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
		settings.ClusterNetworkLabelPrefix + "mgmt": "true",
		// What virt-handler's node labeller writes, and virt-controller's pods select on: a
		// schedulable node, the q35 machine type, and a host-model CPU (Haswell) that VMIs with
		// the default host-model CPU can migrate between.
		"kubevirt.io/schedulable":                      "true",
		"machine-type.node.kubevirt.io/q35":            "true",
		"cpu-model.node.kubevirt.io/Haswell":           "true",
		"host-model-cpu.node.kubevirt.io/Haswell":      "true",
		"cpu-model-migration.node.kubevirt.io/Haswell": "true",
		"cpu-vendor.node.kubevirt.io/Intel":            "true",
	}
	annotations := map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}
	mtu := s.UplinkMTU
	if mtu == 0 {
		mtu = DefaultUplinkMTU
	}
	annotations[NICMTUAnnotationPrefix+LabNIC] = strconv.Itoa(mtu)
	for _, cn := range s.ClusterNetworks {
		labels[settings.ClusterNetworkLabelPrefix+cn] = "true"
		annotations[UplinkMTUAnnotationPrefix+cn] = strconv.Itoa(mtu)
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{Unschedulable: s.Unschedulable},
	}
	if s.Witness {
		labels[settings.WitnessLabel] = "true"
		node.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/etcd", Value: "true", Effect: corev1.TaintEffectNoExecute}}
	}
	node.Spec.Taints = append(node.Spec.Taints, s.Taints...)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
		"devices.kubevirt.io/kvm":       resource.MustParse("1k"),
		"devices.kubevirt.io/tun":       resource.MustParse("1k"),
		"devices.kubevirt.io/vhost-net": resource.MustParse("1k"),
	}
	node.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "v1.34.4"},
	}
	return node
}

// CreateNodes creates the nodes (skipping existing ones) and waits until kwok reports each Ready.
func CreateNodes(ctx context.Context, c client.Client, specs []NodeSpec) error {
	for _, s := range specs {
		if err := c.Create(ctx, NodeObject(s)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", s.Name, err)
		}
	}
	for _, s := range specs {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			node := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: s.Name}, node); err != nil {
				return false, nil
			}
			return NodeReady(node) && !hasTaint(node, "node.kubernetes.io/not-ready"), nil
		})
		if err != nil {
			return fmt.Errorf("node %s not Ready and untainted: %w", s.Name, err)
		}
	}
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
