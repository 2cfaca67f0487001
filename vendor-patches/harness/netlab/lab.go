package netlab

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
)

// Lab is two namespaces, "source" and "target", and their addresses.
type Lab struct {
	Source, Target string // namespace names
	// Management and migration addresses of each node.
	SourceMgmt, TargetMgmt string
	SourceMig, TargetMig   string
	// Devices carrying those addresses, in their namespaces.
	SourceMgmtDev, TargetMgmtDev string
	SourceMigDev, TargetMigDev   string
	// VLAN tells whether the migration addresses sit on an 802.1Q sub-interface.
	VLAN bool
	// Notes are messages for the test log (e.g. why VLAN was skipped).
	Notes []string
	// external: the namespaces belong to whoever built them (Open); Close leaves them.
	external bool
}

// Probe reports why namespaces cannot be created here, or nil.
func Probe() error {
	id := randomID()
	ns := "vpprobe" + id
	if out, err := ip("netns", "add", ns); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	_, _ = ip("netns", "del", ns)
	return nil
}

// New creates a lab with names unique to this run. Close removes it.
func New() (*Lab, error) {
	id := randomID()
	b := randomOctet()
	l := &Lab{
		Source: "vps" + id, Target: "vpt" + id,
		SourceMgmt: fmt.Sprintf("10.%d.1.1", b), TargetMgmt: fmt.Sprintf("10.%d.1.2", b),
		SourceMig: fmt.Sprintf("10.%d.2.1", b), TargetMig: fmt.Sprintf("10.%d.2.2", b),
	}
	if err := l.build(id); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Lab) build(id string) error {
	mA, mB, gA := "vpm"+id+"a", "vpm"+id+"b", "vpg"+id+"a"
	steps := [][]string{
		{"netns", "add", l.Source},
		{"netns", "add", l.Target},
		{"link", "add", mA, "netns", l.Source, "type", "veth", "peer", "name", mB, "netns", l.Target},
		{"link", "add", gA, "netns", l.Source, "type", "veth", "peer", "name", "migration0", "netns", l.Target},
		{"-n", l.Source, "link", "set", "lo", "up"},
		{"-n", l.Target, "link", "set", "lo", "up"},
		{"-n", l.Source, "addr", "add", l.SourceMgmt + "/24", "dev", mA},
		{"-n", l.Target, "addr", "add", l.TargetMgmt + "/24", "dev", mB},
		{"-n", l.Source, "link", "set", mA, "up"},
		{"-n", l.Target, "link", "set", mB, "up"},
		{"-n", l.Source, "link", "set", gA, "up"},
		{"-n", l.Target, "link", "set", "migration0", "up"},
	}
	for _, s := range steps {
		if out, err := ip(s...); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	l.SourceMgmtDev, l.TargetMgmtDev = mA, mB
	srcDev, dstDev := gA, "migration0"
	if _, err := ip("-n", l.Source, "link", "add", "link", gA, "name", gA+".1", "type", "vlan", "id", "100"); err == nil {
		if _, err := ip("-n", l.Target, "link", "add", "link", "migration0", "name", "migration0.1", "type", "vlan", "id", "100"); err == nil {
			_, _ = ip("-n", l.Source, "link", "set", gA+".1", "up")
			_, _ = ip("-n", l.Target, "link", "set", "migration0.1", "up")
			srcDev, dstDev, l.VLAN = gA+".1", "migration0.1", true
		}
	}
	l.SourceMigDev, l.TargetMigDev = srcDev, dstDev
	if !l.VLAN {
		l.Notes = append(l.Notes, "802.1Q VLAN sub-interfaces unavailable on this kernel (no 8021q): skipping the VLAN part, migration addresses sit on the veth itself")
	}
	for _, s := range [][]string{
		{"-n", l.Source, "addr", "add", l.SourceMig + "/24", "dev", srcDev},
		{"-n", l.Target, "addr", "add", l.TargetMig + "/24", "dev", dstDev},
	} {
		if out, err := ip(s...); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return l.staticNeighbours()
}

// staticNeighbours enters each peer's address as a permanent neighbour on both
// links. The kernel has one neighbour table for every namespace together
// (gc_thresh3, 1024 entries by default): with other namespaces on the machine
// filling it, ARP resolution fails with "neighbor table overflow" and the lab's
// links carry nothing. Permanent entries are exempt from that limit.
func (l *Lab) staticNeighbours() error {
	for _, n := range []struct{ ns, dev, peerNS, peerDev, peerIP string }{
		{l.Source, l.SourceMgmtDev, l.Target, l.TargetMgmtDev, l.TargetMgmt},
		{l.Target, l.TargetMgmtDev, l.Source, l.SourceMgmtDev, l.SourceMgmt},
		{l.Source, l.SourceMigDev, l.Target, l.TargetMigDev, l.TargetMig},
		{l.Target, l.TargetMigDev, l.Source, l.SourceMigDev, l.SourceMig},
	} {
		out, err := exec.Command("ip", "-n", n.peerNS, "-j", "link", "show", "dev", n.peerDev).Output()
		if err != nil {
			return fmt.Errorf("ip -n %s link show dev %s: %w", n.peerNS, n.peerDev, err)
		}
		var links []struct {
			Address string `json:"address"`
		}
		if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 || links[0].Address == "" {
			return fmt.Errorf("ip -j link show dev %s: %q: %v", n.peerDev, out, err)
		}
		s := []string{"-n", n.ns, "neigh", "replace", n.peerIP, "lladdr", links[0].Address, "dev", n.dev, "nud", "permanent"}
		if out, err := ip(s...); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// Counters are one device's byte counters.
type Counters struct{ RX, TX uint64 }

// Read returns the byte counters of dev in namespace ns (the kernel's
// /sys/class/net/DEV/statistics, as "ip -s link" shows them).
func Read(ns, dev string) (Counters, error) {
	out, err := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		return Counters{}, fmt.Errorf("ip -n %s -s link show dev %s: %w", ns, dev, err)
	}
	var links []struct {
		Stats64 struct {
			RX struct {
				Bytes uint64 `json:"bytes"`
			} `json:"rx"`
			TX struct {
				Bytes uint64 `json:"bytes"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return Counters{}, fmt.Errorf("ip -s -j link show dev %s: %q: %v", dev, out, err)
	}
	return Counters{RX: links[0].Stats64.RX.Bytes, TX: links[0].Stats64.TX.Bytes}, nil
}

// Links are the counters of all four devices of the lab.
type Links struct{ SourceMgmt, TargetMgmt, SourceMig, TargetMig Counters }

// ReadLinks reads the counters of the lab's four devices.
func (l *Lab) ReadLinks() (Links, error) {
	var k Links
	for _, d := range []struct {
		ns, dev string
		c       *Counters
	}{{l.Source, l.SourceMgmtDev, &k.SourceMgmt}, {l.Target, l.TargetMgmtDev, &k.TargetMgmt},
		{l.Source, l.SourceMigDev, &k.SourceMig}, {l.Target, l.TargetMigDev, &k.TargetMig}} {
		c, err := Read(d.ns, d.dev)
		if err != nil {
			return Links{}, err
		}
		*d.c = c
	}
	return k, nil
}

// Close deletes both namespaces (and with them the veth pairs).
func (l *Lab) Close() {
	if l.external {
		return
	}
	_, _ = ip("netns", "del", l.Source)
	_, _ = ip("netns", "del", l.Target)
}

// Exec returns a command that runs argv inside namespace ns. The process is
// killed if the test process dies first (e.g. a -timeout panic), so no node or
// QEMU outlives a crashed test run.
func Exec(ns string, argv ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	// "ip netns exec" execs argv in place, and the parent-death signal survives exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return string(out), err
}

func randomID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func randomOctet() int {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return 100 + int(b[0])%100
}
