package nodenet_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/nodenet"
)

// nic is the lab's macvlan master: the same name on every node (nodenet.Fabric.SetNIC).
const nic = "ens5"

// TestMacvlan runs the macvlan cases on one lab (a control plane each costs seconds): node-a, node-b
// and node-c with ens5 at 9000, node-d with ens5 at 1500 and no other macvlan on it.
func TestMacvlan(t *testing.T) {
	l := startLab(t, "node-a", "node-b", "node-c", "node-d")
	for n, mtu := range map[string]int{"node-a": 9000, "node-b": 9000, "node-c": 9000, "node-d": 1500} {
		if err := l.fabric.SetNIC(context.Background(), n, nic, mtu); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("probes at its MTU", func(t *testing.T) { testMacvlanProbesAtItsMTU(t, l) })
	t.Run("what the plugin attaches", func(t *testing.T) { testMacvlanPluginAttaches(t, l) })
}

// testMacvlanProbesAtItsMTU: migranet's macvlan NAD, attached by the real macvlan plugin
// (containernetworking/plugins v1.9.1) over each node's ens5 with real whereabouts IPAM, carries
// the probe agents' full-size Don't-Fragment probes at the NAD's MTU (8000, below the NICs' 9000)
// between three nodes both ways; node-b's
// ens5 narrowed to 1500 fails every pair with node-b (PathMTU, largest 1500) while node-a and
// node-c still pass; restored, the others' probes to node-b pass again while node-b's own stay at
// 1500 (the kernel lowered its macvlan with the master and never raises it). Catches: a macvlan NAD the real plugin refuses (no
// attachment at all), an mtu not rendered (migration0 at the master's 9000: the agent's open
// fails), and a prober that misses a narrowed master.
func testMacvlanProbesAtItsMTU(t *testing.T, l *lab) {
	nodes := []string{"node-a", "node-b", "node-c"}
	ctx := context.Background()
	config := mustConfig(t, `{"macvlan":{"master":"`+nic+`"},"range":"10.93.0.0/28","mtu":8000}`)
	if !strings.Contains(config, `"type":"macvlan"`) {
		t.Fatalf("not a macvlan config: %s", config)
	}
	probers := map[string]*nodeagent.Prober{}
	peers := map[string]nodeagent.Peer{}
	for _, n := range nodes {
		sb, addr, err := l.add(t, n, "virt-handler-"+n, config)
		if err != nil {
			t.Fatal(err)
		}
		probers[n] = l.agentOn(t, sb, "uid-virt-handler-"+n, addr.Addr(), 8000)
		peers[n] = nodeagent.Peer{Node: n, Addr: netip.AddrPortFrom(addr.Addr(), 4797)}
	}
	round := func() map[string]string {
		got := map[string]string{}
		for _, from := range nodes {
			var ps []nodeagent.Peer
			for _, to := range nodes {
				if to != from {
					ps = append(ps, peers[to])
				}
			}
			for _, r := range probers[from].Round(ctx, ps, 300*time.Millisecond) {
				if r.Reason != "" {
					got[from+">"+r.Node] = fmt.Sprintf("%s %d", r.Reason, r.Largest)
				}
			}
		}
		return got
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		if got := round(); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: failing pairs %v, want %v", step, got, want)
		}
	}
	expect("healthy at 8000", nil)
	if err := l.fabric.SetNIC(ctx, "node-b", nic, 1500); err != nil {
		t.Fatal(err)
	}
	mtu := fmt.Sprintf("%s 1500", v1beta1.PathMTU)
	expect("node-b's ens5 at 1500", map[string]string{"node-a>node-b": mtu, "node-b>node-a": mtu, "node-b>node-c": mtu, "node-c>node-b": mtu})
	if err := l.fabric.SetNIC(ctx, "node-b", nic, 9000); err != nil {
		t.Fatal(err)
	}
	// The kernel lowered node-b's migration0 with its master (macvlan_device_event) and does not
	// raise it again: node-b's own probes stay at 1500 until its virt-handler gets a new
	// migration0 (a restart); frames to node-b cross again (a macvlan's receive path does not
	// check its MTU).
	expect("node-b's ens5 back at 9000, its migration0 still 1500", map[string]string{"node-b>node-a": mtu, "node-b>node-c": mtu})
}

// testMacvlanPluginAttaches: what the real macvlan plugin does with migranet's macvlan NADs on
// the lab's nodes, case by case, each next to a neighbour that differs in one thing. Modes bridge,
// private and vepa all carry full-size DF frames between two nodes (the modes differ only between
// macvlans of one node's master); an mtu above the master's is refused by the plugin on the node
// whose ens5 is narrower and accepted on the one whose is not; a master a node lacks is refused
// there; passthru takes the master for one pod, a second pod on that node cannot attach (why a
// value may not ask for it). Catches: a mode accepted by settings that cannot carry node-to-node
// traffic, an MTU check that settings would have to make (the plugin makes it), a passthru
// refusal without ground.
func testMacvlanPluginAttaches(t *testing.T, l *lab) {
	ctx := context.Background()
	for i, mode := range []string{"bridge", "private", "vepa"} {
		t.Run("mode "+mode+" carries node to node", func(t *testing.T) {
			config := mustConfig(t, fmt.Sprintf(`{"macvlan":{"master":"%s","mode":"%s"},"range":"10.94.%d.0/29","mtu":9000}`, nic, mode, i))
			_, a, err := l.add(t, "node-a", "m-"+mode+"-a", config)
			if err != nil {
				t.Fatal(err)
			}
			sbB, _, err := l.add(t, "node-b", "m-"+mode+"-b", config)
			if err != nil {
				t.Fatal(err)
			}
			if err := nodenet.Ping(ctx, sbB, a.Addr(), nodenet.FullPayload(a.Addr(), 9000)); err != nil {
				t.Errorf("a 9000-byte DF frame from node-b to node-a in mode %s: %v", mode, err)
			}
			if err := nodenet.Ping(ctx, sbB, a.Addr(), nodenet.FullPayload(a.Addr(), 9000)+1); err == nil {
				t.Errorf("a 9001-byte DF frame left migration0 (MTU 9000) in mode %s", mode)
			}
		})
	}
	t.Run("mtu above the master's", func(t *testing.T) {
		config := mustConfig(t, `{"macvlan":{"master":"`+nic+`"},"range":"10.95.0.0/29","mtu":9000}`)
		if _, _, err := l.add(t, "node-b", "m-mtu-b", config); err != nil {
			t.Errorf("node-b (ens5 at 9000): %v", err)
		}
		_, _, err := l.add(t, "node-d", "m-mtu-d", config)
		if err == nil || !strings.Contains(err.Error(), "invalid MTU 9000, must be [0, master MTU(1500)]") {
			t.Errorf("node-d (ens5 at 1500): ADD gave %v, want the plugin's invalid MTU", err)
		}
	})
	t.Run("master missing on the node", func(t *testing.T) {
		config := mustConfig(t, `{"macvlan":{"master":"ens6"},"range":"10.96.0.0/29"}`)
		if _, _, err := l.add(t, "node-a", "m-ens6-a", config); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("ADD over a master node-a lacks gave %v, want link not found", err)
		}
	})
	t.Run("passthru holds the master for one pod", func(t *testing.T) {
		// Written by hand: settings refuses passthru in a value.
		config := `{"cniVersion":"0.3.1","type":"macvlan","master":"` + nic + `","mode":"passthru","ipam":{"type":"whereabouts","range":"10.97.0.0/29"}}`
		if _, _, err := l.add(t, "node-d", "m-pt-1", config); err != nil {
			t.Fatalf("first passthru ADD on node-d: %v", err)
		}
		if _, _, err := l.add(t, "node-d", "m-pt-2", config); err == nil {
			t.Errorf("a second passthru macvlan on node-d's %s attached", nic)
		}
	})
}
