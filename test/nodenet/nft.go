package nodenet

import (
	"context"
	"net/netip"
	"strconv"
)

// DropFrom makes namespace n drop every packet it receives from addr (nftables, table
// migranet_test in n): one direction of a path is cut, the other still carries. Undrop removes it.
func DropFrom(ctx context.Context, n NS, addr netip.Addr) error {
	return drop(ctx, n, "inet", "migranet_test", "in", "input", addr)
}

// Undrop removes what DropFrom added to n.
func Undrop(ctx context.Context, n NS) error {
	_, err := Exec(ctx, n, "nft", "delete", "table", "inet", "migranet_test")
	return err
}

// DropBridged makes node namespace n's bridge drop every frame it would forward from addr
// (nftables bridge family, table migranet_test_bridge): a host firewall that cuts one direction of
// the paths through that node's bridge, whichever pod sits behind it. UndropBridged removes it.
func DropBridged(ctx context.Context, n NS, addr netip.Addr) error {
	return drop(ctx, n, "bridge", "migranet_test_bridge", "forward", "forward", addr)
}

// UndropBridged removes what DropBridged added to n.
func UndropBridged(ctx context.Context, n NS) error {
	_, err := Exec(ctx, n, "nft", "delete", "table", "bridge", "migranet_test_bridge")
	return err
}

// DropProbesBridged makes node namespace n's bridge drop the UDP datagrams from addr to port (the
// probe agents' port, PathReport.port) and nothing else: a host firewall that drops the probes
// but passes the migration stream. UndropBridged removes it.
func DropProbesBridged(ctx context.Context, n NS, addr netip.Addr, port int) error {
	return drop(ctx, n, "bridge", "migranet_test_bridge", "forward", "forward", addr, "udp", "dport", strconv.Itoa(port))
}

// drop adds to n table (of family) a chain on hook that drops what comes from addr and matches
// the further expression match (none: everything from addr).
func drop(ctx context.Context, n NS, family, table, chain, hook string, addr netip.Addr, match ...string) error {
	ipFamily := "ip"
	if addr.Is6() {
		ipFamily = "ip6"
	}
	rule := append([]string{"add", "rule", family, table, chain, ipFamily, "saddr", addr.String()}, match...)
	for _, args := range [][]string{
		{"add", "table", family, table},
		{"add", "chain", family, table, chain, "{ type filter hook " + hook + " priority 0; }"},
		append(rule, "drop"),
	} {
		if _, err := Exec(ctx, n, "nft", args...); err != nil {
			return err
		}
	}
	return nil
}
