package nodenet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Fabric is the wiring between the nodes: a host namespace per node and, per cluster network, a
// bridge in a switch namespace that every node carrying that network is joined to by a veth
// uplink. A node's side of the uplink (UplinkName) is enslaved to the node's <cluster
// network>-br bridge, as Harvester's network agent enslaves the cluster network's bond; the MTU
// of both ends is the uplink's MTU, so a frame larger than it is dropped where it leaves the node
// (the bridge's forwarding drops frames longer than the port's MTU), as a switch port or NIC with
// a smaller MTU drops it.
type Fabric struct {
	// Prefix starts every namespace's name; unique per local cluster.
	Prefix string

	mu    sync.Mutex
	nodes map[string]int // node name → index (names the switch-side veths)
	nets  map[string]int // cluster network → index (names the switch bridges)
}

// UplinkName is a node's uplink of a cluster network, in the node's host namespace.
func UplinkName(clusterNetwork string) string { return ifName(clusterNetwork, "-bo") }

// BridgeName is a cluster network's bridge on a node (Harvester's <cn>-br, the NAD's "bridge").
func BridgeName(clusterNetwork string) string { return clusterNetwork + "-br" }

// ifName fits name+suffix into an interface name (at most 15 bytes) by shortening name.
func ifName(name, suffix string) string {
	if n := 15 - len(suffix); len(name) > n {
		name = name[:n]
	}
	return name + suffix
}

// Switch is the namespace holding the switch bridges.
func (f *Fabric) Switch() NS { return NS(f.Prefix + "-sw") }

// Host is a node's host namespace.
func (f *Fabric) Host(node string) NS { return NS(f.Prefix + "-" + node) }

// AddNode creates the node's host namespace (idempotent).
func (f *Fabric) AddNode(ctx context.Context, node string) (NS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes == nil {
		f.nodes, f.nets = map[string]int{}, map[string]int{}
	}
	if _, ok := f.nodes[node]; !ok {
		f.nodes[node] = len(f.nodes)
	}
	if err := AddNS(ctx, f.Switch()); err != nil {
		return "", err
	}
	return f.Host(node), AddNS(ctx, f.Host(node))
}

// switchPort is the switch-side end of node's uplink of network cn.
func (f *Fabric) switchPort(node, cn string) string {
	return "n" + strconv.Itoa(f.nodes[node]) + "c" + strconv.Itoa(f.nets[cn])
}

// SetUplink makes node carry cluster network cn with an uplink of the given MTU: the node's
// bridge (created when missing), the veth pair to the switch's bridge of cn, both ends up at mtu.
// Called again, it only changes the MTU.
func (f *Fabric) SetUplink(ctx context.Context, node, cn string, mtu int) error {
	if _, err := f.AddNode(ctx, node); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nets[cn]; !ok {
		f.nets[cn] = len(f.nets)
	}
	sw, host := string(f.Switch()), string(f.Host(node))
	swBridge, port, uplink, br := "s"+strconv.Itoa(f.nets[cn]), f.switchPort(node, cn), UplinkName(cn), BridgeName(cn)
	m := strconv.Itoa(mtu)
	if ip(ctx, "-n", sw, "link", "show", swBridge) != nil {
		if err := ip(ctx, "-n", sw, "link", "add", swBridge, "type", "bridge"); err != nil {
			return err
		}
		if err := ip(ctx, "-n", sw, "link", "set", swBridge, "mtu", "65000", "up"); err != nil {
			return err
		}
	}
	if ip(ctx, "-n", host, "link", "show", br) != nil {
		if err := ip(ctx, "-n", host, "link", "add", br, "type", "bridge"); err != nil {
			return err
		}
	}
	if ip(ctx, "-n", host, "link", "show", uplink) != nil {
		if err := ip(ctx, "-n", host, "link", "add", uplink, "type", "veth", "peer", "name", port, "netns", sw); err != nil {
			return err
		}
		if err := ip(ctx, "-n", sw, "link", "set", port, "master", swBridge, "up"); err != nil {
			return err
		}
		if err := ip(ctx, "-n", host, "link", "set", uplink, "master", br, "up"); err != nil {
			return err
		}
	}
	// gso_max_segs 1: a GSO packet is cut into frames before it leaves the node, as a NIC's
	// segmentation offload does, so a frame above the uplink's MTU is dropped there; a veth
	// otherwise hands a GSO packet to its peer whole, whatever its MTU (is_skb_forwardable lets
	// GSO through), and a TCP stream crosses an uplink narrower than its segments.
	for _, step := range [][]string{
		{"-n", sw, "link", "set", port, "mtu", m, "gso_max_segs", "1"},
		{"-n", host, "link", "set", uplink, "mtu", m, "gso_max_segs", "1"},
		{"-n", host, "link", "set", br, "up"},
	} {
		if err := ip(ctx, step...); err != nil {
			return fmt.Errorf("uplink of %s on %s: %w", cn, node, err)
		}
	}
	return nil
}

// nicSegment is the fabric's key of NIC nic's switch segment (apart from every cluster network's).
func nicSegment(nic string) string { return "nic/" + nic }

// SetNIC gives node a network interface named nic in its host namespace, joined to a switch
// bridge of its own that every node's nic is joined to, at mtu (both ends): a plain NIC on the lab
// switch, enslaved to nothing, as a macvlan master is (the macvlan plugin's master, by name, the
// same on every node; a bridge port cannot be one: the kernel refuses a second rx handler). Called
// again, it only changes the MTU, which the kernel passes on to the macvlans on it whose MTU is
// larger (macvlan_device_event, NETDEV_CHANGEMTU).
func (f *Fabric) SetNIC(ctx context.Context, node, nic string, mtu int) error {
	if _, err := f.AddNode(ctx, node); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seg := nicSegment(nic)
	if _, ok := f.nets[seg]; !ok {
		f.nets[seg] = len(f.nets)
	}
	sw, host := string(f.Switch()), string(f.Host(node))
	swBridge, port, m := "s"+strconv.Itoa(f.nets[seg]), f.switchPort(node, seg), strconv.Itoa(mtu)
	if ip(ctx, "-n", sw, "link", "show", swBridge) != nil {
		if err := ip(ctx, "-n", sw, "link", "add", swBridge, "type", "bridge"); err != nil {
			return err
		}
		if err := ip(ctx, "-n", sw, "link", "set", swBridge, "mtu", "65000", "up"); err != nil {
			return err
		}
	}
	if ip(ctx, "-n", host, "link", "show", nic) != nil {
		if err := ip(ctx, "-n", host, "link", "add", nic, "type", "veth", "peer", "name", port, "netns", sw); err != nil {
			return err
		}
		if err := ip(ctx, "-n", sw, "link", "set", port, "master", swBridge, "up"); err != nil {
			return err
		}
	}
	for _, step := range [][]string{ // gso_max_segs 1 as for an uplink (SetUplink)
		{"-n", sw, "link", "set", port, "mtu", m, "gso_max_segs", "1"},
		{"-n", host, "link", "set", nic, "mtu", m, "gso_max_segs", "1", "up"},
	} {
		if err := ip(ctx, step...); err != nil {
			return fmt.Errorf("NIC %s on %s: %w", nic, node, err)
		}
	}
	return nil
}

// RemoveUplink takes node off cluster network cn's switch: its uplink goes, its bridge stays with
// whatever ports the pods have on it, which then reach only each other.
func (f *Fabric) RemoveUplink(ctx context.Context, node, cn string) error {
	host := string(f.Host(node))
	if ip(ctx, "-n", host, "link", "show", UplinkName(cn)) != nil {
		return nil
	}
	return ip(ctx, "-n", host, "link", "del", UplinkName(cn))
}

// SetCarrier sets node's uplink of cn down (a pulled cable, a bond without members) or up again;
// SetUplink leaves the state alone.
func (f *Fabric) SetCarrier(ctx context.Context, node, cn string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip(ctx, "-n", string(f.Host(node)), "link", "set", UplinkName(cn), state)
}

// RemoveNode deletes the node's host namespace and with it its bridges and uplinks.
func (f *Fabric) RemoveNode(ctx context.Context, node string) error { return DelNS(ctx, f.Host(node)) }

// Close deletes every namespace whose name starts with the fabric's prefix: the nodes', the
// switch, and the pod sandboxes made beside them.
func (f *Fabric) Close(ctx context.Context) error {
	entries, err := os.ReadDir("/run/netns")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var first error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), f.Prefix+"-") {
			if err := DelNS(ctx, NS(e.Name())); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Isolate moves node's uplink of cn to a switch bridge of its own, or back (isolated false): the
// link stays up at its MTU, but the node reaches no other node on cn, as a switch port whose VLAN
// is not trunked.
func (f *Fabric) Isolate(ctx context.Context, node, cn string, isolated bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sw, port := string(f.Switch()), f.switchPort(node, cn)
	target := "s" + strconv.Itoa(f.nets[cn])
	if isolated {
		target = "x" + port
		if ip(ctx, "-n", sw, "link", "show", target) != nil {
			if err := ip(ctx, "-n", sw, "link", "add", target, "type", "bridge"); err != nil {
				return err
			}
			if err := ip(ctx, "-n", sw, "link", "set", target, "mtu", "65000", "up"); err != nil {
				return err
			}
		}
	}
	return ip(ctx, "-n", sw, "link", "set", port, "master", target)
}

// ShapeUplink limits node's uplink of cn to bytesPerSecond in each direction, as a NIC of that
// speed would (a TBF on both ends: leaving the node, and leaving the switch towards it); 0 takes
// the limit away.
func (f *Fabric) ShapeUplink(ctx context.Context, node, cn string, bytesPerSecond int64) error {
	f.mu.Lock()
	ends := [][2]string{{string(f.Host(node)), UplinkName(cn)}, {string(f.Switch()), f.switchPort(node, cn)}}
	f.mu.Unlock()
	for _, e := range ends {
		if bytesPerSecond == 0 {
			_, _ = run(ctx, "tc", "-n", e[0], "qdisc", "del", "dev", e[1], "root")
			continue
		}
		burst := strconv.FormatInt(max(bytesPerSecond/100, 64<<10), 10) // 10 ms, and a GSO packet
		if _, err := run(ctx, "tc", "-n", e[0], "qdisc", "replace", "dev", e[1], "root", "tbf",
			"rate", strconv.FormatInt(bytesPerSecond*8, 10)+"bit", "burst", burst, "latency", "50ms"); err != nil {
			return fmt.Errorf("shaping the uplink of %s on %s: %w", cn, node, err)
		}
	}
	return nil
}
