package nodenet

import (
	"context"
	"net/netip"
	"strconv"
)

// Ping sends one ICMP echo of size payload bytes from namespace n to addr with Don't Fragment
// set (ping -M do) and waits at most a second for the reply: nil when it came back. A payload of
// MTU − 28 (IPv4) or MTU − 48 (IPv6) fills a frame of the MTU.
func Ping(ctx context.Context, n NS, addr netip.Addr, payload int) error {
	_, err := Exec(ctx, n, "ping", "-n", "-q", "-M", "do", "-c", "1", "-W", "1", "-s", strconv.Itoa(payload), addr.String())
	return err
}

// FullPayload is the ICMP payload that fills an IP packet of mtu bytes: mtu − 28 for IPv4
// (20-byte header, 8-byte ICMP header), mtu − 48 for IPv6.
func FullPayload(addr netip.Addr, mtu int) int {
	if addr.Is4() {
		return mtu - 28
	}
	return mtu - 48
}
