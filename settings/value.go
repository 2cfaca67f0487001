package settings

import (
	"fmt"
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
	// MTU of migration0, 0 to inherit the bridge's (the master's for macvlan).
	MTU int `json:"mtu,omitempty"`
	// Macvlan, when set, carries the network with the macvlan CNI plugin over a named node
	// interface instead of Harvester's bridge: ClusterNetwork is then optional (set, it still
	// selects the nodes by their label) and VLAN must be 0.
	Macvlan *MacvlanValue `json:"macvlan,omitempty"`
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

var migrationNetworkKeys = []string{keyClusterNetwork, keyVLAN, keyRange, keyExclude, keyMTU, keyMacvlan}

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
		case keyMacvlan:
			var merrs field.ErrorList
			m.Macvlan, merrs = decodeMacvlan(mem.raw, p)
			errs = append(errs, merrs...)
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
