package settings

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MigrationNetwork is the value of the vm-migration-network setting.
type MigrationNetwork struct {
	// ClusterNetwork is the Harvester cluster network whose bridge <ClusterNetwork>-br carries
	// migration traffic.
	ClusterNetwork string `json:"clusterNetwork"`
	// VLAN is the 802.1Q tag, 0 for untagged.
	VLAN int `json:"vlan"`
	// Range is the whereabouts range (CIDR) virt-handler's migration0 addresses come from.
	Range string `json:"range"`
	// Exclude lists CIDRs or single IPs of Range that are never assigned.
	Exclude []string `json:"exclude,omitempty"`
	// MTU of migration0, 0 to inherit the bridge's.
	MTU int `json:"mtu,omitempty"`
}

// JSON keys of a MigrationNetwork value.
const (
	keyClusterNetwork = "clusterNetwork"
	keyVLAN           = "vlan"
	keyRange          = "range"
	keyExclude        = "exclude"
	keyMTU            = "mtu"
)

const exampleValue = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`

var migrationNetworkKeys = []string{keyClusterNetwork, keyVLAN, keyRange, keyExclude, keyMTU}

// ParseMigrationNetwork strictly decodes a vm-migration-network value. An empty or whitespace-only
// raw means the migration network is disabled and returns nil, nil.
//
// Decoding is strict: unknown or case-mismatched keys, wrong JSON types, duplicate keys and data
// after the object are errors on the offending path under fld. Whenever raw is a JSON object the
// returned value is non-nil and holds every member that decoded, even when errs is not empty, so
// callers can run ValidateMigrationNetwork on it and report every problem at once
// (ParseAndValidateMigrationNetwork does that without double-reporting a field). Parsing does not
// judge the values themselves; ValidateMigrationNetwork does.
func ParseMigrationNetwork(raw string, fld *field.Path) (*MigrationNetwork, field.ErrorList) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	members, errs := decodeObject(raw, fld, exampleValue)
	if members == nil {
		return nil, errs
	}
	m := &MigrationNetwork{}
	for _, mem := range members {
		p := fld.Child(shorten(mem.key))
		var err *field.Error
		switch mem.key {
		case keyClusterNetwork:
			m.ClusterNetwork, err = decodeString(mem.raw, p, `"migration"`)
		case keyVLAN:
			m.VLAN, err = decodeInt(mem.raw, p, "100")
		case keyRange:
			m.Range, err = decodeString(mem.raw, p, `"192.168.100.0/24"`)
		case keyMTU:
			m.MTU, err = decodeInt(mem.raw, p, "9000")
		case keyExclude:
			var lerrs field.ErrorList
			m.Exclude, lerrs = decodeStringList(mem.raw, p, `"192.168.100.1/32"`)
			errs = append(errs, lerrs...)
		default:
			err = unknownKey(p, mem.key)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return m, BoundErrors(errs)
}

func unknownKey(p *field.Path, key string) *field.Error {
	e := field.NotSupported(p, shorten(key), migrationNetworkKeys)
	e.Detail = "unknown key; " + e.Detail
	for _, k := range migrationNetworkKeys {
		if strings.EqualFold(k, key) {
			e.Detail += fmt.Sprintf(" (keys are case-sensitive: did you mean %q?)", k)
		}
	}
	return e
}

// Canonical returns the canonical JSON of m: keys in a fixed order, vlan always present, mtu and
// exclude omitted when zero or empty, range and excludes in netip's canonical spelling (lower-case,
// compressed IPv6; a bare IP exclude becomes /32 or /128) and excludes sorted by address then
// prefix length. Entries that do not parse are kept as written (sorted after the parsed ones), so an
// invalid value stays invalid; masking host bits is left to the user (validation suggests it).
// Whitespace, key order, exclude order, bare-IP vs /32 spelling and omitted vs zero vlan/mtu do not
// change the result. A nil receiver returns nil.
func (m *MigrationNetwork) Canonical() []byte {
	if m == nil {
		return nil
	}
	c := m.canonicalCopy()
	b, err := json.Marshal(c)
	if err != nil { // cannot happen for this struct of strings and ints
		return nil
	}
	return b
}

// canonicalCopy returns a copy of m with the range and excludes canonically spelled and ordered.
func (m *MigrationNetwork) canonicalCopy() MigrationNetwork {
	c := *m
	if p, err := netip.ParsePrefix(m.Range); err == nil {
		c.Range = p.String()
	}
	if len(m.Exclude) == 0 {
		c.Exclude = nil
		return c
	}
	type entry struct {
		p    netip.Prefix
		ok   bool
		text string
	}
	es := make([]entry, len(m.Exclude))
	for i, s := range m.Exclude {
		p, _, err := parsePrefixOrAddr(s)
		es[i] = entry{p: p, ok: err == nil, text: s}
		if err == nil {
			es[i].text = p.String()
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.ok && b.ok:
			if c := a.p.Addr().Compare(b.p.Addr()); c != 0 {
				return c
			}
			return cmp.Compare(a.p.Bits(), b.p.Bits())
		case a.ok != b.ok:
			if a.ok {
				return -1
			}
			return 1
		}
		return strings.Compare(a.text, b.text)
	})
	c.Exclude = make([]string, len(es))
	for i, e := range es {
		c.Exclude[i] = e.text
	}
	return c
}

// Hash returns the hex SHA-256 of Canonical(), or "" for a nil receiver.
func (m *MigrationNetwork) Hash() string {
	if m == nil {
		return ""
	}
	sum := sha256.Sum256(m.Canonical())
	return hex.EncodeToString(sum[:])
}

// Summary is a short human form for `kubectl get`, e.g.
// "migration vlan 100 192.168.100.0/24 (-1) mtu 9000": cluster network, "vlan N" or "untagged",
// range, "(-N)" when N exclude entries are set, "mtu N" when set. A nil receiver is "disabled".
func (m *MigrationNetwork) Summary() string {
	if m == nil {
		return "disabled"
	}
	c := m.canonicalCopy()
	parts := []string{c.ClusterNetwork}
	if c.VLAN != 0 {
		parts = append(parts, fmt.Sprintf("vlan %d", c.VLAN))
	} else {
		parts = append(parts, "untagged")
	}
	parts = append(parts, c.Range)
	if n := len(c.Exclude); n > 0 {
		parts = append(parts, fmt.Sprintf("(-%d)", n))
	}
	if c.MTU != 0 {
		parts = append(parts, fmt.Sprintf("mtu %d", c.MTU))
	}
	return strings.Join(parts, " ")
}
