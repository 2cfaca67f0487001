package settings

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// specialBlock is an address block with a special purpose (IANA's IPv4 and IPv6 Special-Purpose
// Address Registries, RFC 6890).
type specialBlock struct {
	prefix netip.Prefix
	what   string // what the block is for, with its RFC
}

// refusedBlocks are the blocks whose addresses a node cannot own for unicast traffic: a range that
// overlaps one of them is refused. Two CIDRs either nest or are disjoint, so "overlaps" means the
// range lies inside the block or contains it.
//
// 240.0.0.0/4 is refused whole: IANA lists it as reserved, neither a valid source nor destination,
// and most stacks other than Linux drop it; its last address is the limited broadcast.
// IPv4-mapped IPv6 (::ffff:0:0/96) is refused by parsing already (parsePrefixOrAddr); the block is
// listed too for a range such as ::/64 that contains it along with :: and ::1.
var refusedBlocks = []specialBlock{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (RFC 1122): 0.0.0.0 means "unspecified", no node can own these addresses`},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (RFC 1122): every node has these addresses on lo, they never leave the node"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (RFC 3927): never routed, and clouds use 169.254.169.254 for metadata"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (RFC 5771): a group address, not one a node can own"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the limited broadcast address (RFC 919)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved for future use (RFC 1112): not a valid unicast address on most stacks"},
	{netip.MustParsePrefix("::/128"), "the unspecified IPv6 address (RFC 4291)"},
	{netip.MustParsePrefix("::1/128"), "the IPv6 loopback address (RFC 4291)"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped IPv6 (RFC 4291): these stand for IPv4 addresses inside a dual-stack socket, never on a wire"},
	{netip.MustParsePrefix("fe80::/10"), "IPv6 link-local (RFC 4291): every interface already has one, and they need a zone to be used"},
	{netip.MustParsePrefix("ff00::/8"), "IPv6 multicast (RFC 4291): a group address, not one a node can own"},
}

// documentationBlocks are reserved for examples (RFC 5737, RFC 3849, RFC 9637). A node can own
// them, and on the dedicated VLAN of a migration network they work, so a range inside one is
// admitted with a warning rather than refused: the migration traffic never leaves that VLAN, but
// the RFCs ask that these blocks not be used on real networks and tools may treat them as bogons.
var documentationBlocks = []specialBlock{
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation TEST-NET-1 (RFC 5737)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation TEST-NET-2 (RFC 5737)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation TEST-NET-3 (RFC 5737)"},
	{netip.MustParsePrefix("2001:db8::/32"), "IPv6 documentation (RFC 3849)"},
	{netip.MustParsePrefix("3fff::/20"), "IPv6 documentation (RFC 9637)"},
}

// unicastSuggestion ends every refusal of a special-purpose range.
const unicastSuggestion = `use a private range instead: RFC 1918 (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16), ` +
	`CGNAT 100.64.0.0/10, or an IPv6 unique local range (fc00::/7), e.g. "192.168.100.0/24" or "fd00:100::/64"`

// overlapping returns the blocks of list that overlap p (same family), in list order.
func overlapping(p netip.Prefix, list []specialBlock) []specialBlock {
	var out []specialBlock
	for _, b := range list {
		if b.prefix.Addr().Is4() == p.Addr().Is4() && b.prefix.Overlaps(p) {
			out = append(out, b)
		}
	}
	return out
}

// checkUnicast refuses a range (masked) that overlaps a block no node can own for unicast traffic,
// naming every such block, and warns for one inside a documentation block. raw is the range as
// written, for the error.
func checkUnicast(p netip.Prefix, raw string, fld *field.Path) (*field.Error, string) {
	if bad := overlapping(p, refusedBlocks); len(bad) > 0 {
		parts := make([]string, len(bad))
		for i, b := range bad {
			parts[i] = fmt.Sprintf("%s is %s", b.prefix, b.what)
		}
		return field.Invalid(fld, raw, fmt.Sprintf(
			"uses addresses no node can own for unicast traffic (%s); %s",
			strings.Join(parts, "; "), unicastSuggestion)), ""
	}
	if doc := overlapping(p, documentationBlocks); len(doc) > 0 {
		return nil, fmt.Sprintf("%s: %s overlaps %s, %s: it works on the migration network's own VLAN, "+
			"but these addresses are reserved for examples; %s", fld, p, doc[0].prefix, doc[0].what, unicastSuggestion)
	}
	return nil, ""
}
