package nodenet_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/sim"
)

// TestPluginLists runs NADs whose config is a plugin list, as real Multus resolves and libcni
// chains them, on one lab (a control plane each costs seconds): node-a and node-b on the
// migration cluster network (uplinks at 1500) and with ens5 at 9000.
func TestPluginLists(t *testing.T) {
	l := startLab(t, "node-a", "node-b")
	for _, n := range []string{"node-a", "node-b"} {
		if err := l.fabric.SetUplink(context.Background(), n, "migration", 1500); err != nil {
			t.Fatal(err)
		}
		if err := l.fabric.SetNIC(context.Background(), n, nic, 9000); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("bridge and tuning", func(t *testing.T) { testBridgeTuning(t, l) })
	t.Run("bridge and bandwidth", func(t *testing.T) { testBridgeBandwidth(t, l) })
	t.Run("ipvlan with whereabouts", func(t *testing.T) { testIPvlan(t, l) })
}

// attach is Multus' ADD of pod (kubevirt/<pod>) on node to the network config, in a new sandbox:
// the chain, and its undoing when it fails (nodenet.Plugins.Attach).
func (l *lab) attach(t *testing.T, node, pod, config string) (nodenet.NS, *nodenet.Result, error) {
	t.Helper()
	sb := nodenet.NS(l.fabric.Prefix + "-p-" + pod)
	if err := nodenet.AddNS(context.Background(), sb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodenet.DelNS(context.Background(), sb) })
	res, err := l.plugins.Attach(context.Background(), l.req("ADD", node, pod, sb, config))
	return sb, res, err
}

// del is the kubelet's DEL of the pod's network.
func (l *lab) del(t *testing.T, node, pod string, sb nodenet.NS, config string) {
	t.Helper()
	if _, err := l.plugins.Run(context.Background(), l.req("DEL", node, pod, sb, config)); err != nil {
		t.Fatalf("DEL of %s: %v", pod, err)
	}
}

// allocations is how many addresses whereabouts holds in the pool of rng.
func (l *lab) allocations(t *testing.T, rng string) int {
	t.Helper()
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(sim.IPPoolGVK)
	key := client.ObjectKey{Namespace: sim.WhereaboutsNamespace, Name: sim.PoolName("", netip.MustParsePrefix(rng))}
	if err := l.c.Client.Get(context.Background(), key, pool); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return 0
		}
		t.Fatal(err)
	}
	allocs, _, _ := unstructured.NestedMap(pool.Object, "spec", "allocations")
	return len(allocs)
}

// linkMTU is the MTU the kernel gives migration0 in the sandbox.
func linkMTU(t *testing.T, sb nodenet.NS) string {
	t.Helper()
	out, err := nodenet.Exec(context.Background(), sb, "ip", "-o", "link", "show", "migration0")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(out), " mtu ")
	return strings.Fields(after)[0]
}

// testBridgeTuning: a list of the bridge plugin (MTU 1400, whereabouts) and the tuning plugin
// (MTU 1300, a sysctl of the interface), attached on two nodes, gives migration0 the tuning's MTU
// and sysctl in each sandbox; a full 1300-byte DF frame crosses, one byte more does not; the lab's
// model of the link (sim.ParseLinkConf, what the virt-handler stand-in judges paths by) says the
// kernel's MTU. DEL runs tuning before bridge: tuning restores the interface and removes its
// backup, whereabouts gives both addresses back. Catches: a list refused ("names no plugin type"),
// tuning given no prevResult ("Required prevResult missing"), DEL in list order (bridge removes
// migration0 first, tuning finds nothing to restore and leaves its backup file), the stand-in's
// model reading the bridge's MTU.
func testBridgeTuning(t *testing.T, l *lab) {
	ctx := context.Background()
	dataDir := t.TempDir()
	config := `{"cniVersion":"1.0.0","plugins":[` +
		`{"type":"bridge","bridge":"migration-br","mtu":1400,"ipam":{"type":"whereabouts","range":"10.98.0.0/29"}},` +
		`{"type":"tuning","mtu":1300,"sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"},"dataDir":"` + dataDir + `"}]}`
	sbs := map[string]nodenet.NS{}
	var addrB netip.Prefix
	for _, n := range []string{"node-a", "node-b"} {
		sb, res, err := l.attach(t, n, "lt-"+n, config)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		sbs[n] = sb
		addr, _, ok := res.Addr("migration0")
		if !ok {
			t.Fatalf("%s: the chain's result names no address on migration0: %+v", n, res)
		}
		addrB = addr
		if got := linkMTU(t, sb); got != "1300" {
			t.Errorf("%s: migration0 MTU %s, want tuning's 1300", n, got)
		}
		out, err := nodenet.Exec(ctx, sb, "cat", "/proc/sys/net/ipv4/conf/migration0/arp_notify")
		if err != nil || strings.TrimSpace(string(out)) != "1" {
			t.Errorf("%s: arp_notify %q (%v), want tuning's 1", n, out, err)
		}
	}
	if got := l.allocations(t, "10.98.0.0/29"); got != 2 {
		t.Errorf("whereabouts holds %d addresses after two ADDs, want 2", got)
	}
	if lc, err := sim.ParseLinkConf(config); err != nil || (sim.Link{BridgeConf: lc.BridgeConf}).EffectiveMTU() != 1300 {
		t.Errorf("the stand-in's model of the link: %+v %v, want MTU 1300 as the kernel has it", lc, err)
	}
	if err := nodenet.Ping(ctx, sbs["node-a"], addrB.Addr(), nodenet.FullPayload(addrB.Addr(), 1300)); err != nil {
		t.Errorf("a full 1300-byte DF frame node-a to node-b: %v", err)
	}
	if err := nodenet.Ping(ctx, sbs["node-a"], addrB.Addr(), nodenet.FullPayload(addrB.Addr(), 1300)+1); err == nil {
		t.Errorf("a 1301-byte DF frame left a migration0 tuned to 1300")
	}
	backups, _ := filepath.Glob(filepath.Join(dataDir, "*.json"))
	if len(backups) != 2 {
		t.Errorf("tuning's backups after two ADDs: %v, want one per sandbox", backups)
	}
	for _, n := range []string{"node-a", "node-b"} {
		l.del(t, n, "lt-"+n, sbs[n], config)
		if _, err := nodenet.Exec(ctx, sbs[n], "ip", "link", "show", "migration0"); err == nil {
			t.Errorf("%s: migration0 still there after DEL", n)
		}
	}
	if backups, _ := filepath.Glob(filepath.Join(dataDir, "*.json")); len(backups) != 0 {
		t.Errorf("tuning's backups left after DEL (its DEL ran after the bridge's removed migration0?): %v", backups)
	}
	if got := l.allocations(t, "10.98.0.0/29"); got != 0 {
		t.Errorf("whereabouts still holds %d addresses after DEL", got)
	}
}

// testBridgeBandwidth: a list of the bridge plugin and the bandwidth plugin shapes the pod's
// traffic on the host side of its veth, in the node's namespace: a tbf qdisc at the ingress rate
// on the bridge's host veth, and the egress redirected to an ifb device shaped at the egress
// rate; DEL removes the ifb. Catches: bandwidth given no prevResult ("must be called as chained
// plugin"), a chain whose last result is not the one handed back (no host veth to find), a DEL
// given another network name than the ADD (the ifb, named after it, stays).
func testBridgeBandwidth(t *testing.T, l *lab) {
	ctx := context.Background()
	config := `{"cniVersion":"1.0.0","plugins":[` +
		`{"type":"bridge","bridge":"migration-br","mtu":1400,"ipam":{"type":"whereabouts","range":"10.98.1.0/29"}},` +
		`{"type":"bandwidth","ingressRate":8000000,"ingressBurst":80000,"egressRate":4000000,"egressBurst":40000}]}`
	sb, res, err := l.attach(t, "node-a", "lb-a", config)
	if err != nil {
		t.Fatal(err)
	}
	host := l.fabric.Host("node-a")
	var hostVeth, ifb string
	for _, i := range res.Interfaces {
		switch {
		case i.Sandbox != "" || i.Name == "migration-br":
		case strings.HasPrefix(i.Name, "bwp"):
			ifb = i.Name
		default:
			hostVeth = i.Name
		}
	}
	if hostVeth == "" || ifb == "" {
		t.Fatalf("the chain's result names no host veth or ifb device: %+v", res.Interfaces)
	}
	qdisc := func(dev string) string {
		out, err := nodenet.Exec(ctx, host, "tc", "qdisc", "show", "dev", dev)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if q := qdisc(hostVeth); !strings.Contains(q, "tbf") || !strings.Contains(q, "rate 8Mbit") {
		t.Errorf("host veth %s on node-a: %q, want a tbf at 8Mbit (the ingress rate)", hostVeth, q)
	}
	if q := qdisc(ifb); !strings.Contains(q, "tbf") || !strings.Contains(q, "rate 4Mbit") {
		t.Errorf("ifb %s on node-a: %q, want a tbf at 4Mbit (the egress rate)", ifb, q)
	}
	l.del(t, "node-a", "lb-a", sb, config)
	if _, err := nodenet.Exec(ctx, host, "ip", "link", "show", ifb); err == nil {
		t.Errorf("ifb %s still on node-a after DEL", ifb)
	}
	if got := l.allocations(t, "10.98.1.0/29"); got != 0 {
		t.Errorf("whereabouts still holds %d addresses after DEL", got)
	}
}

// testIPvlan: an ipvlan NAD (l2 over each node's ens5, MTU 8000) with whereabouts, written as a
// plugin list with tuning, attaches on two nodes and carries full 8000-byte DF frames between
// them, one byte more not. On a kernel without ipvlan (CONFIG_IPVLAN unset, as on the machine this
// was written on) the real plugin's ADD fails with the kernel's refusal, which the lab's Multus
// reports and undoes as Multus does (no migration0, no address held): that is asserted instead,
// and the test says so. Catches: an ipvlan list not resolved or not run, a failed ADD left
// half done.
func testIPvlan(t *testing.T, l *lab) {
	ctx := context.Background()
	config := `{"cniVersion":"1.0.0","plugins":[` +
		`{"type":"ipvlan","master":"` + nic + `","mode":"l2","mtu":8000,"ipam":{"type":"whereabouts","range":"10.98.2.0/29"}},` +
		`{"type":"tuning","sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1"}}]}`
	if !kernelHasIPvlan(t, l) {
		sb, _, err := l.attach(t, "node-a", "li-a", config)
		if err == nil || !strings.Contains(err.Error(), `plugin type="ipvlan" failed (add)`) || !strings.Contains(err.Error(), "failed to create ipvlan") {
			t.Fatalf("ADD on a kernel without ipvlan gave %v, want the real ipvlan plugin's refusal", err)
		}
		if _, lerr := nodenet.Exec(ctx, sb, "ip", "link", "show", "migration0"); lerr == nil {
			t.Errorf("migration0 left in the sandbox after the failed ADD")
		}
		if got := l.allocations(t, "10.98.2.0/29"); got != 0 {
			t.Errorf("whereabouts holds %d addresses after the failed ADD", got)
		}
		t.Logf("this kernel has no ipvlan (CONFIG_IPVLAN): the real plugin's refusal was checked, not the packets (%v)", err)
		return
	}
	var sbA nodenet.NS
	var addrB netip.Addr
	for _, n := range []string{"node-a", "node-b"} {
		sb, res, err := l.attach(t, n, "li-"+n, config)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		addr, _, ok := res.Addr("migration0")
		if !ok {
			t.Fatalf("%s: no address on migration0: %+v", n, res)
		}
		if got := linkMTU(t, sb); got != "8000" {
			t.Errorf("%s: migration0 MTU %s, want 8000", n, got)
		}
		if n == "node-a" {
			sbA = sb
		}
		addrB = addr.Addr()
	}
	if err := nodenet.Ping(ctx, sbA, addrB, nodenet.FullPayload(addrB, 8000)); err != nil {
		t.Errorf("a full 8000-byte DF frame over ipvlan node-a to node-b: %v", err)
	}
	if err := nodenet.Ping(ctx, sbA, addrB, nodenet.FullPayload(addrB, 8000)+1); err == nil {
		t.Errorf("an 8001-byte DF frame left an ipvlan of MTU 8000")
	}
}

// kernelHasIPvlan tries to make an ipvlan over node-a's ens5 and removes it again.
func kernelHasIPvlan(t *testing.T, l *lab) bool {
	t.Helper()
	host := string(l.fabric.Host("node-a"))
	_, err := nodenet.Exec(context.Background(), nodenet.NS(host), "ip", "link", "add", "ipvprobe", "link", nic, "type", "ipvlan", "mode", "l2")
	if err != nil {
		if !strings.Contains(err.Error(), "Unknown device type") && !strings.Contains(err.Error(), "not supported") {
			t.Fatalf("probing for ipvlan: %v", err)
		}
		return false
	}
	_, _ = nodenet.Exec(context.Background(), nodenet.NS(host), "ip", "link", "del", "ipvprobe")
	return true
}
