package nodenet

import (
	"context"
	"net/netip"
)

// DropFrom makes namespace n drop every packet it receives from addr (nftables, table
// migranet_test in n): one direction of a path is cut, the other still carries. Undrop removes it.
func DropFrom(ctx context.Context, n NS, addr netip.Addr) error {
	family := "ip"
	if addr.Is6() {
		family = "ip6"
	}
	for _, args := range [][]string{
		{"add", "table", "inet", "migranet_test"},
		{"add", "chain", "inet", "migranet_test", "in", "{ type filter hook input priority 0; }"},
		{"add", "rule", "inet", "migranet_test", "in", family, "saddr", addr.String(), "drop"},
	} {
		if _, err := Exec(ctx, n, "nft", args...); err != nil {
			return err
		}
	}
	return nil
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
	family := "ip"
	if addr.Is6() {
		family = "ip6"
	}
	for _, args := range [][]string{
		{"add", "table", "bridge", "migranet_test_bridge"},
		{"add", "chain", "bridge", "migranet_test_bridge", "forward", "{ type filter hook forward priority 0; }"},
		{"add", "rule", "bridge", "migranet_test_bridge", "forward", family, "saddr", addr.String(), "drop"},
	} {
		if _, err := Exec(ctx, n, "nft", args...); err != nil {
			return err
		}
	}
	return nil
}

// UndropBridged removes what DropBridged added to n.
func UndropBridged(ctx context.Context, n NS) error {
	_, err := Exec(ctx, n, "nft", "delete", "table", "bridge", "migranet_test_bridge")
	return err
}
