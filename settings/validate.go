package settings

import (
	"fmt"
	"math/big"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of the value's fields.
const (
	MaxVLAN      = 4094
	MinMTU       = 576
	MaxMTU       = 9216
	MinMTUIPv6   = 1280
	maxIfNameLen = 15 // Linux IFNAMSIZ (16) minus the terminating NUL
	bridgeSuffix = "-br"
	// MaxClusterNetworkLen keeps the bridge name <clusterNetwork>-br within maxIfNameLen.
	MaxClusterNetworkLen = maxIfNameLen - len(bridgeSuffix)
)

// Headroom: a warning is given when usable addresses are fewer than headroomNum/headroomDen times
// the eligible nodes (1.2, i.e. less than 20% spare).
const (
	headroomNum = 6
	headroomDen = 5
)

// maxJudgedName: a cluster network name longer than this is refused for its length alone.
const maxJudgedName = 1024

// BridgeName is the Linux bridge of a Harvester cluster network.
func BridgeName(clusterNetwork string) string { return clusterNetwork + bridgeSuffix }

// ValidateMigrationNetwork checks a parsed vm-migration-network value and returns every problem
// found, with paths under fld, plus warnings for soft problems (each prefixed with its field path).
// A nil m (disabled) is valid. With cl == nil the checks that need the cluster (cluster network on
// every eligible node, no overlap with the cluster's pod and Service ranges, addresses for every
// eligible node, headroom) are skipped; the others,
// including "excludes leave no assignable address", always run.
func ValidateMigrationNetwork(m *MigrationNetwork, cl *Cluster, fld *field.Path) (errs field.ErrorList, warnings []string) {
	if m == nil {
		return nil, nil
	}
	cnPath, rangePath := fld.Child(keyClusterNetwork), fld.Child(keyRange)
	cnErrs := validateClusterNetwork(m.ClusterNetwork, cnPath)
	errs = append(errs, cnErrs...)
	errs = append(errs, validateVLAN(m.VLAN, fld.Child(keyVLAN))...)
	rng, rerrs := validateRange(m.Range, rangePath)
	errs = append(errs, rerrs...)
	if rng.usable {
		uerr, uwarn := checkUnicast(rng.prefix, m.Range, rangePath)
		if uerr != nil {
			rng.clean = false
			errs = append(errs, uerr)
		}
		if uwarn != "" {
			warnings = append(warnings, uwarn)
		}
	}
	errs = append(errs, validateMTU(m.MTU, rng, fld.Child(keyMTU))...)
	excl, countable, eerrs := validateExcludes(m.Exclude, rng, fld.Child(keyExclude))
	errs = append(errs, eerrs...)

	if cl != nil && len(cnErrs) == 0 {
		if missing, eligible := cl.missingClusterNetwork(m.ClusterNetwork); len(missing) > 0 {
			errs = append(errs, field.Invalid(cnPath, m.ClusterNetwork, fmt.Sprintf(
				"cluster network %q is missing on %d of %d eligible nodes (nodes that run virt-handler): %s; "+
					"attach it to them (they must carry the label %s%s=true) or keep virt-handler off them "+
					"with the KubeVirt CR's spec.workloads.nodePlacement.nodeSelector",
				m.ClusterNetwork, len(missing), eligible, listNodes(missing), ClusterNetworkLabelPrefix, m.ClusterNetwork)))
		}
	}
	if rng.clean && cl != nil {
		if err := checkClusterRanges(rng.prefix, m.Range, cl, rangePath); err != nil {
			errs = append(errs, err)
		}
	}
	if rng.clean && countable {
		cerrs, cwarns := checkCapacity(rng.prefix, excl, len(m.Exclude), cl, m.Range, rangePath, fld.Child(keyExclude))
		errs = append(errs, cerrs...)
		warnings = append(warnings, cwarns...)
	}
	return errs, warnings
}

func validateClusterNetwork(cn string, fld *field.Path) field.ErrorList {
	if cn == "" {
		return field.ErrorList{field.Required(fld, fmt.Sprintf(
			"name the Harvester cluster network that carries migration traffic, e.g. \"migration\" "+
				"(its nodes are labelled %s<name>=true and its bridge is <name>%s)", ClusterNetworkLabelPrefix, bridgeSuffix))}
	}
	if len(cn) > maxJudgedName { // judged by length alone: no regular expression over megabytes
		return field.ErrorList{field.Invalid(fld, shorten(cn), fmt.Sprintf(
			"is %d bytes long; a cluster network name is at most %d characters (its bridge <name>%s must fit Linux's %d-character "+
				"interface names), lower-case letters, digits and '-', e.g. \"migration\"", len(cn), MaxClusterNetworkLen, bridgeSuffix, maxIfNameLen))}
	}
	var errs field.ErrorList
	if msgs := validation.IsDNS1123Label(cn); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld, cn, fmt.Sprintf(
			"must be a valid cluster network name, as it becomes the node label %s%s and the bridge %s: %s",
			ClusterNetworkLabelPrefix, cn, BridgeName(cn), strings.Join(msgs, "; "))))
	}
	if n := len(BridgeName(cn)); n > maxIfNameLen {
		errs = append(errs, field.Invalid(fld, cn, fmt.Sprintf(
			"its bridge name %q is %d characters but Linux interface names are at most %d; "+
				"use a cluster network name of at most %d characters", BridgeName(cn), n, maxIfNameLen, MaxClusterNetworkLen)))
	}
	return errs
}

func validateVLAN(vlan int, fld *field.Path) field.ErrorList {
	if vlan < 0 || vlan > MaxVLAN {
		return field.ErrorList{field.Invalid(fld, vlan, fmt.Sprintf(
			"must be between 0 (untagged) and %d (802.1Q reserves 4095); use the VLAN ID the switch ports carry", MaxVLAN))}
	}
	return nil
}

func validateMTU(mtu int, rng checkedRange, fld *field.Path) field.ErrorList {
	if mtu == 0 {
		return nil
	}
	if mtu < MinMTU || mtu > MaxMTU {
		return field.ErrorList{field.Invalid(fld, mtu, fmt.Sprintf(
			"must be 0 (inherit the bridge's MTU) or between %d and %d", MinMTU, MaxMTU))}
	}
	if rng.usable && rng.prefix.Addr().Is6() && mtu < MinMTUIPv6 {
		return field.ErrorList{field.Invalid(fld, mtu, fmt.Sprintf(
			"an IPv6 range needs an MTU of at least %d (the IPv6 minimum link MTU); use %d to %d, or 0 to inherit the bridge's",
			MinMTUIPv6, MinMTUIPv6, MaxMTU))}
	}
	return nil
}

// checkCapacity compares the assignable addresses of rng minus excl with the eligible nodes.
func checkCapacity(rng netip.Prefix, excl []netip.Prefix, nExcl int, cl *Cluster, rawRange string,
	rangePath, exclPath *field.Path) (field.ErrorList, []string) {
	usable, span := usableCount(rng, excl)
	total := new(big.Int).Add(span.big(), big.NewInt(1))
	excluded := span.sub(uint128{lo: 1}).sub(usable)
	if usable.isZero() {
		return field.ErrorList{field.Invalid(exclPath, fmt.Sprintf("%d entries", nExcl), fmt.Sprintf(
			"the excludes cover every assignable address of range %s (%s addresses minus the first and last); "+
				"remove some excludes or widen the range", rng, total))}, nil
	}
	if cl == nil {
		return nil, nil
	}
	nodes := len(cl.EligibleNodes())
	need := uint128{lo: uint64(nodes)}
	if usable.cmp(need) < 0 {
		return field.ErrorList{field.Invalid(rangePath, rawRange, fmt.Sprintf(
			"has %s usable addresses (%s in the range, minus the first and last and %s excluded) but there are %d eligible nodes, "+
				"each needing one for its virt-handler; use a wider range or fewer excludes",
			usable, total, excluded, nodes))}, nil
	}
	// usable < 1.2 × nodes  ⇔  5·usable < 6·nodes
	if usable.mulSmall(headroomDen).cmp(need.mulSmall(headroomNum)) < 0 {
		recommended := (uint64(nodes)*headroomNum + headroomDen - 1) / headroomDen
		return nil, []string{fmt.Sprintf(
			"%s: only %s usable addresses for %d eligible nodes, less than 20%% headroom (%d or more recommended); "+
				"a node added later would leave its virt-handler without a migration address; widen the range or drop excludes",
			rangePath, usable, nodes, recommended)}
	}
	return nil, nil
}

// ParseAndValidateMigrationNetwork parses raw and validates the result, reporting every problem
// once: a field that failed to decode is not reported again by validation. raw "" (disabled)
// returns nil, nil, nil.
func ParseAndValidateMigrationNetwork(raw string, cl *Cluster, fld *field.Path) (*MigrationNetwork, field.ErrorList, []string) {
	m, errs := ParseMigrationNetwork(raw, fld)
	if m == nil {
		return nil, errs, nil
	}
	verrs, warns := ValidateMigrationNetwork(m, cl, fld)
	bad := map[string]bool{}
	for _, e := range errs {
		if e.Type != field.ErrorTypeDuplicate { // a duplicate key keeps its first value, which is still checked
			bad[e.Field] = true
		}
	}
	for _, e := range verrs {
		if !bad[e.Field] && !bad[parentList(e.Field)] {
			errs = append(errs, e)
		}
	}
	return m, BoundErrors(errs), BoundWarnings(warns)
}

// parentList strips a trailing [i] index from a field path string.
func parentList(path string) string {
	if i := strings.LastIndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
		return path[:i]
	}
	return path
}
