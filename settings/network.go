package settings

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
)

// Network is a vm-migration-network value that passed every check of the value itself, typed:
// what ParseNetwork (and the settings' Effective) produce, and all that the hash, the NAD render,
// the capacity count, the pool check and the tools read. No string of the value is parsed again
// once it is a Network.
type Network struct {
	// ClusterNetwork is the Harvester cluster network whose bridge <ClusterNetwork>-br carries
	// migration traffic. For a macvlan network it only selects the nodes (their label), "" for
	// every node that runs virt-handler.
	ClusterNetwork string
	// VLAN is the 802.1Q tag, 0 for untagged; always 0 for a macvlan network.
	VLAN int
	// Range is the whereabouts range, a masked prefix.
	Range netip.Prefix
	// Exclude are the blocks of Range never assigned.
	Exclude Excludes
	// MTU of migration0, 0 to inherit the bridge's (the master's for macvlan).
	MTU int
	// Macvlan is set when the macvlan CNI plugin carries the network over a node interface; nil
	// for Harvester's bridge.
	Macvlan *Macvlan
}

// Excludes are a network's excluded blocks: masked prefixes of the range's family, inside it and
// disjoint, in canonical order (address, then prefix length). A bare IP is its /32 or /128.
type Excludes []netip.Prefix

// sortExcludes puts excludes in canonical order.
func sortExcludes(e Excludes) {
	slices.SortFunc(e, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Bits(), b.Bits())
	})
}

// Covers reports whether a lies in one of the blocks.
func (e Excludes) Covers(a netip.Addr) bool {
	for _, p := range e {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Strings are the blocks in netip's spelling, nil for none.
func (e Excludes) Strings() []string {
	if len(e) == 0 {
		return nil
	}
	out := make([]string, len(e))
	for i, p := range e {
		out[i] = p.String()
	}
	return out
}

// canonicalJSON is the layout of Canonical: the setting's own keys, in a fixed order.
type canonicalJSON struct {
	ClusterNetwork string   `json:"clusterNetwork"`
	VLAN           int      `json:"vlan"`
	Range          string   `json:"range"`
	Exclude        []string `json:"exclude,omitempty"`
	MTU            int      `json:"mtu,omitempty"`
}

// Canonical returns the canonical JSON of n: keys in a fixed order, vlan always present, mtu and
// exclude omitted when zero or empty, range and excludes in netip's spelling (lower-case,
// compressed IPv6; a bare IP exclude is its /32 or /128), excludes in canonical order. Whitespace,
// key order, exclude order, bare-IP vs /32 spelling and omitted vs zero vlan/mtu of the value it
// was parsed from do not change it. A macvlan network is
// {"macvlan":{"master":M,"mode":D},"clusterNetwork":C,"range":R,"exclude":[...],"mtu":N}: mode
// always written ("bridge" for an omitted one), clusterNetwork omitted when empty, no vlan; a
// bridge network's bytes are what they were before macvlan existed. A nil receiver returns nil.
func (n *Network) Canonical() []byte {
	if n == nil {
		return nil
	}
	if n.Macvlan != nil {
		b, err := json.Marshal(canonicalMacvlanJSON{Macvlan: MacvlanValue{Master: n.Macvlan.Master, Mode: n.Macvlan.Mode},
			ClusterNetwork: n.ClusterNetwork, Range: n.Range.String(), Exclude: n.Exclude.Strings(), MTU: n.MTU})
		if err != nil { // cannot happen for strings and ints
			return nil
		}
		return b
	}
	b, err := json.Marshal(canonicalJSON{ClusterNetwork: n.ClusterNetwork, VLAN: n.VLAN, Range: n.Range.String(),
		Exclude: n.Exclude.Strings(), MTU: n.MTU})
	if err != nil { // cannot happen for strings and ints
		return nil
	}
	return b
}

// Hash returns the hex SHA-256 of Canonical(), or "" for a nil receiver.
func (n *Network) Hash() string {
	if n == nil {
		return ""
	}
	sum := sha256.Sum256(n.Canonical())
	return hex.EncodeToString(sum[:])
}

// Summary is a short human form for `kubectl get`, e.g.
// "migration vlan 100 192.168.100.0/24 (-1) mtu 9000": cluster network, "vlan N" or "untagged",
// range, "(-N)" when N exclude entries are set, "mtu N" when set. A macvlan network starts
// "macvlan <master>", then its mode when not bridge and "on <cluster network>" when one is set:
// "macvlan ens5 192.168.100.0/24 mtu 9000". A nil receiver is "disabled".
func (n *Network) Summary() string {
	if n == nil {
		return "disabled"
	}
	parts := []string{n.ClusterNetwork}
	if n.Macvlan != nil {
		parts = []string{"macvlan", n.Macvlan.Master}
		if n.Macvlan.Mode != MacvlanModeBridge {
			parts = append(parts, n.Macvlan.Mode)
		}
		if n.ClusterNetwork != "" {
			parts = append(parts, "on", n.ClusterNetwork)
		}
	} else if n.VLAN != 0 {
		parts = append(parts, fmt.Sprintf("vlan %d", n.VLAN))
	} else {
		parts = append(parts, "untagged")
	}
	parts = append(parts, n.Range.String())
	if k := len(n.Exclude); k > 0 {
		parts = append(parts, fmt.Sprintf("(-%d)", k))
	}
	if n.MTU != 0 {
		parts = append(parts, fmt.Sprintf("mtu %d", n.MTU))
	}
	return strings.Join(parts, " ")
}

// Usable counts the addresses whereabouts can assign from n: every address of the range except
// its first and last one and except every exclude. whereabouts skips the first (network) and last
// (broadcast) address of a range for IPv6 as well as IPv4: its first usable IP is the network
// address + 1 and its last usable IP is the last address of the prefix - 1 in both families.
// Excludes are removed as whole blocks, including their own first and last addresses.
//
// The count is exact and computed from block boundaries (cost O(n log n) in the number of
// excludes, independent of the range size), never by enumerating addresses; an IPv6 /64 has
// 2^64-2 candidates, so the result is a *big.Int (use ClampInt64 for an int64 field). A nil
// receiver has none.
func (n *Network) Usable() *big.Int {
	if n == nil {
		return new(big.Int)
	}
	u, _ := usableCount(n.Range, n.Exclude)
	return u.big()
}

// Assignable reports, for an address, whether whereabouts may hand it out from n: inside the
// range, not its first or last address and inside no exclude (the addresses Usable counts). A nil
// receiver assigns nothing.
func (n *Network) Assignable(a netip.Addr) bool {
	if n == nil || !n.Range.Contains(a) || a == n.Range.Addr() || a == lastAddr(n.Range) {
		return false
	}
	return !n.Exclude.Covers(a)
}
