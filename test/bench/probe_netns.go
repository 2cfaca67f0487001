package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/test/nodenet"
)

// netnsFabric is nodes+1 network namespaces on one bridge, as the nodes' virt-handler pods are on
// the migration network: namespace <prefix>-0 for the measured agent, <prefix>-1 … for the peers,
// each with migration0 (a veth, MTU prMTU, whose other end is a port of bridge br0 in namespace
// <prefix>-sw) holding 10.251.<i/250>.<i%250+1>/16. The peers' Probers open their sockets inside
// their namespaces (nodeagent.OpenIn, as the agent does in virt-handler's), so every probe and answer
// crosses two veths and a bridge, and the agent's CPU includes the kernel's work for them.
type netnsFabric struct {
	prefix    string
	probers   []*nodeagent.Prober
	addrs     []string // the peers' addr:port
	agentAddr netip.Addr
}

func (f *netnsFabric) ns(i int) nodenet.NS { return nodenet.NS(f.prefix + "-" + strconv.Itoa(i)) }
func (f *netnsFabric) sw() nodenet.NS      { return nodenet.NS(f.prefix + "-sw") }

func fabricAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 251, byte(i / 250), byte(i%250 + 1)})
}

// newNetnsFabric builds the fabric for peers peers; on a machine that cannot (not root, no ip
// command) it returns why.
func newNetnsFabric(ctx context.Context, peers int) (*netnsFabric, error) {
	f := &netnsFabric{prefix: fmt.Sprintf("mgb%d", os.Getpid())}
	if err := nodenet.Available(ctx, nodenet.NS(f.prefix+"-check")); err != nil {
		return nil, err
	}
	ipIn := func(ns nodenet.NS, args ...string) error {
		out, err := exec.CommandContext(ctx, "ip", append([]string{"-n", string(ns)}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip -n %s %v: %v: %s", ns, args, err, out)
		}
		return nil
	}
	fail := func(err error) (*netnsFabric, error) {
		f.Close()
		return nil, err
	}
	if err := nodenet.AddNS(ctx, f.sw()); err != nil {
		return fail(err)
	}
	if err := ipIn(f.sw(), "link", "add", "br0", "mtu", strconv.Itoa(prMTU), "type", "bridge"); err != nil {
		return fail(err)
	}
	m := strconv.Itoa(prMTU)
	for i := 0; i <= peers; i++ {
		ns, addr := f.ns(i), fabricAddr(i)
		port := "p" + strconv.Itoa(i)
		steps := []func() error{
			func() error { return nodenet.AddNS(ctx, ns) },
			func() error {
				return ipIn(f.sw(), "link", "add", port, "mtu", m, "type", "veth", "peer", "name", "migration0", "netns", string(ns), "mtu", m)
			},
			func() error { return ipIn(f.sw(), "link", "set", port, "master", "br0", "up") },
			func() error { return ipIn(ns, "addr", "add", addr.String()+"/16", "dev", "migration0") },
			func() error { return ipIn(ns, "link", "set", "migration0", "up") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fail(err)
			}
		}
	}
	if err := ipIn(f.sw(), "link", "set", "br0", "up"); err != nil {
		return fail(err)
	}
	f.agentAddr = fabricAddr(0)
	for i := 1; i <= peers; i++ {
		opened, err := nodeagent.OpenIn(f.ns(i).Path(), "migration0", fabricAddr(i), 0)
		if err != nil {
			return fail(fmt.Errorf("peer %d: %w", i, err))
		}
		p := nodeagent.NewProber(opened.Conn, prNetwork, prMTU, prTimeout, prTries)
		go p.Serve()
		f.probers = append(f.probers, p)
		f.addrs = append(f.addrs, opened.Conn.LocalAddr().String())
	}
	return f, nil
}

// Close stops the peers and deletes every namespace of the fabric.
func (f *netnsFabric) Close() {
	for _, p := range f.probers {
		p.Close()
	}
	ctx := context.Background()
	for i := 0; nodenet.Exists(f.ns(i)); i++ {
		_ = nodenet.DelNS(ctx, f.ns(i))
	}
	_ = nodenet.DelNS(ctx, f.sw())
}
