package nodenet_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/nodenet"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// lab is a control plane (kube-apiserver, etcd, the whereabouts CRDs) and a fabric of nodes
// whose plugins reach it.
type lab struct {
	c       *cluster.Cluster
	fabric  *nodenet.Fabric
	plugins *nodenet.Plugins
}

func startLab(t *testing.T, nodes ...string) *lab {
	t.Helper()
	ctx := context.Background()
	out, err := exec.Command("bash", filepath.Join(cluster.RepoRoot(), "test", "tools", "build.sh"), "cni").Output()
	if err != nil {
		t.Fatalf("building the CNI plugins: %v", err)
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(t.TempDir(), "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if err := c.InstallCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	l := &lab{c: c, fabric: &nodenet.Fabric{Prefix: fmt.Sprintf("mnt%d", os.Getpid()%100000)},
		plugins: &nodenet.Plugins{BinDir: strings.TrimSpace(string(out)), ConfDir: t.TempDir()}}
	t.Cleanup(func() { _ = l.fabric.Close(context.Background()) })
	if err := l.plugins.WriteWhereaboutsConf(c.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(c.Config.Host, "https://")
	for _, n := range nodes {
		ns, err := l.fabric.AddNode(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		fw, err := nodenet.Forward(ns, host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fw.Close() })
	}
	return l
}

// add attaches pod (kubevirt/<pod>) on node to the network whose config is given, in a new
// sandbox namespace, and returns the sandbox and the address.
func (l *lab) add(t *testing.T, node, pod, config string) (nodenet.NS, netip.Prefix, error) {
	t.Helper()
	ctx := context.Background()
	sb := nodenet.NS(l.fabric.Prefix + "-p-" + pod)
	if err := nodenet.AddNS(ctx, sb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodenet.DelNS(context.Background(), sb) })
	res, err := l.plugins.Run(ctx, l.req("ADD", node, pod, sb, config))
	if err != nil {
		return sb, netip.Prefix{}, err
	}
	addr, _, ok := res.Addr("migration0")
	if !ok {
		t.Fatalf("ADD for %s returned no address on migration0: %+v", pod, res)
	}
	return sb, addr, nil
}

func (l *lab) req(cmd, node, pod string, sb nodenet.NS, config string) nodenet.Request {
	return nodenet.Request{Command: cmd, Host: l.fabric.Host(node), Sandbox: sb, ContainerID: "c-" + pod, IfName: "migration0",
		PodNamespace: "kubevirt", PodName: pod, PodUID: "uid-" + pod, NetworkName: "kubevirt/vm-migration-network-x", Config: config}
}

func mustConfig(t *testing.T, value string) string {
	t.Helper()
	m, errs, _ := settings.ParseNetwork(value, field.NewPath("value"))
	if m == nil {
		t.Fatalf("%s: %v", value, errs)
	}
	return settings.NADConfig(m)
}

// TestRealPluginsCarryFullFramesOnly: migranet's own NAD, attached by the real bridge plugin with
// real whereabouts IPAM on two nodes, gives each an address of the range and a migration0 of the
// setting's MTU; a Don't-Fragment packet filling that MTU crosses the switch, one byte more does
// not; an uplink with a smaller MTU drops the full-size packet while small ones still pass.
// Catches: an attachment that is not on the node's bridge (nothing crosses), an MTU not applied
// to migration0 (1373 crosses), and a probe that cannot tell an MTU-broken path from a working
// one (the last two steps).
func TestRealPluginsCarryFullFramesOnly(t *testing.T) {
	l := startLab(t, "node-a", "node-b")
	ctx := context.Background()
	for _, n := range []string{"node-a", "node-b"} {
		if err := l.fabric.SetUplink(ctx, n, "migration", 1500); err != nil {
			t.Fatal(err)
		}
	}
	config := mustConfig(t, `{"clusterNetwork":"migration","range":"10.90.0.0/29","mtu":1400}`)
	sbA, a, err := l.add(t, "node-a", "virt-handler-a", config)
	if err != nil {
		t.Fatal(err)
	}
	sbB, b, err := l.add(t, "node-b", "virt-handler-b", config)
	if err != nil {
		t.Fatal(err)
	}
	rng := netip.MustParsePrefix("10.90.0.0/29")
	if !rng.Contains(a.Addr()) || !rng.Contains(b.Addr()) || a.Addr() == b.Addr() || a.Bits() != 29 {
		t.Fatalf("addresses %s and %s; want two distinct ones of %s", a, b, rng)
	}
	out, err := nodenet.Exec(ctx, sbA, "ip", "-o", "link", "show", "migration0")
	if err != nil || !strings.Contains(string(out), "mtu 1400 ") {
		t.Fatalf("migration0 in %s: %v %s; want mtu 1400", sbA, err, out)
	}
	if err := nodenet.Ping(ctx, sbA, b.Addr(), 1372); err != nil {
		t.Errorf("a full 1400-byte DF packet from %s to %s: %v", a, b, err)
	}
	if err := nodenet.Ping(ctx, sbA, b.Addr(), 1373); err == nil {
		t.Errorf("a 1401-byte DF packet crossed a network of MTU 1400")
	}
	if err := l.fabric.SetUplink(ctx, "node-b", "migration", 1300); err != nil {
		t.Fatal(err)
	}
	if err := nodenet.Ping(ctx, sbB, a.Addr(), 1272); err != nil {
		t.Errorf("a 1300-byte packet over node-b's 1300 uplink: %v", err)
	}
	if err := nodenet.Ping(ctx, sbB, a.Addr(), 1372); err == nil {
		t.Errorf("a 1400-byte DF packet crossed node-b's uplink of MTU 1300")
	}
	_ = time.Second
}
