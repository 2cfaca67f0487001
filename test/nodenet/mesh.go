package nodenet

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Mesh is n sandboxes on one bridge, as the nodes' virt-handler pods are on the migration
// network, without the control plane: namespace <prefix>-<i> holds migration0 (a veth whose
// other end is a port of bridge br0 in <prefix>-sw) with address Addr(i). Enough to run the
// probes of many nodes in one kernel.
type Mesh struct {
	Prefix string
	N      int
	IPv6   bool
}

// NS is sandbox i's namespace.
func (m *Mesh) NS(i int) NS { return NS(m.Prefix + "-" + strconv.Itoa(i)) }

// Switch is the namespace of the bridge.
func (m *Mesh) Switch() NS { return NS(m.Prefix + "-sw") }

// Addr is sandbox i's migration0 address: 10.252.0.0/16 or fd00:252::/64.
func (m *Mesh) Addr(i int) netip.Addr {
	if m.IPv6 {
		return netip.AddrFrom16([16]byte{0xfd, 0, 2, 0x52, 14: byte(i >> 8), 15: byte(i&0xff) + 1})
	}
	return netip.AddrFrom4([4]byte{10, 252, byte(i / 250), byte(i%250 + 1)})
}

func (m *Mesh) prefixLen() string {
	if m.IPv6 {
		return "/64"
	}
	return "/16"
}

// batch runs `ip [-n ns] -batch -` with the lines.
func batch(ctx context.Context, ns NS, lines []string) error {
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", string(ns)}, args...)
	}
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// NewMesh creates the namespaces, the bridge and the n sandboxes with MTU mtu; Close deletes
// them (also on failure).
func NewMesh(ctx context.Context, prefix string, n, mtu int, ipv6 bool) (*Mesh, error) {
	m := &Mesh{Prefix: prefix, N: n, IPv6: ipv6}
	fail := func(err error) (*Mesh, error) {
		m.Close()
		return nil, err
	}
	adds := []string{"netns add " + string(m.Switch())}
	for i := range n {
		adds = append(adds, "netns add "+string(m.NS(i)))
	}
	if err := batch(ctx, "", adds); err != nil {
		return fail(err)
	}
	mt := strconv.Itoa(mtu)
	if err := batch(ctx, m.Switch(), []string{"link add br0 mtu " + mt + " type bridge", "link set br0 up"}); err != nil {
		return fail(err)
	}
	nodad := ""
	if ipv6 {
		nodad = " nodad"
	}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := batch(ctx, m.NS(i), []string{
				"link add migration0 mtu " + mt + " type veth peer name p" + strconv.Itoa(i) + " mtu " + mt + " netns " + string(m.Switch()),
				"addr add " + m.Addr(i).String() + m.prefixLen() + " dev migration0" + nodad,
				"link set migration0 up",
			})
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fail(first)
	}
	var ports []string
	for i := range n {
		ports = append(ports, "link set p"+strconv.Itoa(i)+" master br0 up")
	}
	if err := batch(ctx, m.Switch(), ports); err != nil {
		return fail(err)
	}
	return m, nil
}

// Close deletes every namespace of the mesh.
func (m *Mesh) Close() {
	var dels []string
	for i := range m.N {
		if Exists(m.NS(i)) {
			dels = append(dels, "netns del "+string(m.NS(i)))
		}
	}
	if Exists(m.Switch()) {
		dels = append(dels, "netns del "+string(m.Switch()))
	}
	if len(dels) > 0 {
		if err := batch(context.Background(), "", dels); err != nil {
			fmt.Fprintln(os.Stderr, "nodenet: deleting the mesh:", err)
		}
	}
}
