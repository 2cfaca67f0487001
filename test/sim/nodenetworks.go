package sim

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
)

// NodeNetworks are the kwok nodes' real networks (package nodenet): with it, Multus runs the real
// bridge and whereabouts plugins in the nodes' namespaces instead of simulating them, and the
// virt-handler stand-in judges a migration's path by probing it.
type NodeNetworks struct {
	Fabric  *nodenet.Fabric
	Plugins *nodenet.Plugins
	// APIServer is the API server's host:port, forwarded into every node's namespace for
	// whereabouts.
	APIServer string

	// CgroupRoot is the cgroup v2 hierarchy the sandboxes' pause processes are placed in
	// (nodenet.CgroupRoot), under a directory named Fabric.Prefix.
	CgroupRoot string

	mu       sync.Mutex
	forwards map[string]io.Closer
}

// Pause starts the process of the sandbox of pod uid in namespace ns (nodenet.StartPause).
func (n *NodeNetworks) Pause(ns nodenet.NS, uid string) (*nodenet.Pause, error) {
	return nodenet.StartPause(ns, n.CgroupRoot, n.Fabric.Prefix, uid)
}

// Node makes sure node has its host namespace and the API server forward, and returns the
// namespace.
func (n *NodeNetworks) Node(ctx context.Context, node string) (nodenet.NS, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ns, err := n.Fabric.AddNode(ctx, node)
	if err != nil || n.forwards[node] != nil {
		return ns, err
	}
	fw, err := nodenet.Forward(ns, n.APIServer)
	if err != nil {
		return ns, err
	}
	if n.forwards == nil {
		n.forwards = map[string]io.Closer{}
	}
	n.forwards[node] = fw
	return ns, nil
}

// removeNode ends node's forward and deletes its namespace.
func (n *NodeNetworks) removeNode(ctx context.Context, node string) error {
	n.mu.Lock()
	if fw := n.forwards[node]; fw != nil {
		fw.Close()
		delete(n.forwards, node)
	}
	n.mu.Unlock()
	return n.Fabric.RemoveNode(ctx, node)
}

// Close ends every forward and deletes every namespace of the fabric.
func (n *NodeNetworks) Close(ctx context.Context) error {
	n.mu.Lock()
	for node, fw := range n.forwards {
		fw.Close()
		delete(n.forwards, node)
	}
	n.mu.Unlock()
	err := n.Fabric.Close(ctx)
	nodenet.RemoveCgroups(n.CgroupRoot, n.Fabric.Prefix)
	return err
}

// HarvesterAgent stands in for Harvester's network agent on every node (network-controller-harvester
// v1.8.2) on top of the real node networks: for each cluster network a node is labelled with
// (ClusterNetworkLabelPrefix+cn = "true", which the agent sets once it set the network up) the
// node's <cn>-br bridge and its uplink to the switch exist, with the MTU of the node annotation
// cluster.UplinkMTUAnnotationPrefix+cn (DefaultUplinkMTU without one); without the label the
// uplink is taken away (the bridge stays with the pods' ports on it, reaching only each other). A spec changes a node's networks the way an admin changes a VlanConfig: through
// those labels and annotations. Every node also has the lab's plain NIC cluster.LabNIC (a macvlan
// master) at the MTU of its annotation cluster.NICMTUAnnotationPrefix+LabNIC (DefaultUplinkMTU
// without one), as an OpenShift node has a spare NIC whatever Harvester would do.
type HarvesterAgent struct {
	Client client.Client
	Nodes  *NodeNetworks

	mu      sync.Mutex
	carried map[string]map[string]bool // node → cluster networks set up there
	nicMTU  map[string]int             // node → the MTU its LabNIC was last set to
}

// SetupWithManager registers the agent with a manager.
func (a *HarvesterAgent) SetupWithManager(mgr ctrl.Manager) error {
	a.carried, a.nicMTU = map[string]map[string]bool{}, map[string]int{}
	return ctrl.NewControllerManagedBy(mgr).Named("sim-harvester-agent").For(&corev1.Node{}).Complete(a)
}

// Reconcile brings one node's namespace, bridges and uplinks in line with its labels.
func (a *HarvesterAgent) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := a.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		a.mu.Lock()
		delete(a.carried, req.Name)
		delete(a.nicMTU, req.Name)
		a.mu.Unlock()
		return reconcile.Result{}, a.Nodes.removeNode(ctx, req.Name)
	}
	if _, err := a.Nodes.Node(ctx, node.Name); err != nil {
		return reconcile.Result{}, err
	}
	if err := a.setNIC(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	want := map[string]int{}
	for k, v := range node.Labels {
		if cn, ok := strings.CutPrefix(k, ClusterNetworkLabelPrefix); ok && cn != "" && v == "true" {
			want[cn] = DefaultUplinkMTU
			if m, err := strconv.Atoi(node.Annotations[cluster.UplinkMTUAnnotationPrefix+cn]); err == nil && m > 0 {
				want[cn] = m
			}
		}
	}
	a.mu.Lock()
	had := a.carried[node.Name]
	a.mu.Unlock()
	for cn := range had {
		if _, ok := want[cn]; !ok {
			if err := a.Nodes.Fabric.RemoveUplink(ctx, node.Name, cn); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	now := map[string]bool{}
	for cn, mtu := range want {
		if err := a.Nodes.Fabric.SetUplink(ctx, node.Name, cn, mtu); err != nil {
			return reconcile.Result{}, err
		}
		now[cn] = true
	}
	a.mu.Lock()
	a.carried[node.Name] = now
	a.mu.Unlock()
	return reconcile.Result{}, nil
}

// setNIC gives node its LabNIC at the MTU of its annotation, unless it already has it.
func (a *HarvesterAgent) setNIC(ctx context.Context, node *corev1.Node) error {
	mtu := NodeNICMTU(node, cluster.LabNIC)
	a.mu.Lock()
	done := a.nicMTU[node.Name] == mtu
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.Nodes.Fabric.SetNIC(ctx, node.Name, cluster.LabNIC, mtu); err != nil {
		return err
	}
	a.mu.Lock()
	a.nicMTU[node.Name] = mtu
	a.mu.Unlock()
	return nil
}
