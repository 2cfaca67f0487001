package settings

import (
	"fmt"
	"math/big"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ManagementClusterNetwork is Harvester's built-in cluster network, whose bridge carries the
// nodes' management traffic untagged.
const ManagementClusterNetwork = "mgmt"

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
	v := checkValue(m, fld)
	cerrs, cwarns := v.againstCluster(cl, fld)
	return append(v.errs, cerrs...), append(v.warns, cwarns...)
}

// checkedValue is a decoded value after the checks of the value itself: the typed network built
// from what those checks parsed (a field that failed is left zero), what the checks that need the
// cluster may rely on, and the problems found.
type checkedValue struct {
	net Network
	// clusterNetworkOK: the cluster network passed (its nodes can be looked for); rangeOK: the
	// range is clean (its overlap with the cluster's networks can be judged); countable: the
	// excludes parsed with the range's family and leave addresses (usable is their count, span the
	// range's size minus one).
	clusterNetworkOK, rangeOK, countable bool
	usable, span                         uint128
	nExclude                             int
	rawRange                             string
	errs                                 field.ErrorList
	warns                                []string
}

// valuePaths are the fields the checks of a value report on: the setting's keys under one path
// (keyPaths), or where a NAD's CNI configuration holds the same facts (NetworkFromNAD).
type valuePaths struct {
	clusterNetwork, vlan, rng, exclude, mtu *field.Path
	// master and mode of a macvlan network.
	master, mode *field.Path
}

// keyPaths are the setting value's own keys under fld.
func keyPaths(fld *field.Path) valuePaths {
	return valuePaths{clusterNetwork: fld.Child(keyClusterNetwork), vlan: fld.Child(keyVLAN), rng: fld.Child(keyRange),
		exclude: fld.Child(keyExclude), mtu: fld.Child(keyMTU),
		master: fld.Child(keyMacvlan, keyMaster), mode: fld.Child(keyMacvlan, keyMode)}
}

// checkValue runs the checks of the value itself; it parses each string of m exactly once.
func checkValue(m *MigrationNetwork, fld *field.Path) *checkedValue {
	return checkValueAt(m, keyPaths(fld))
}

// checkValueAt is checkValue reporting on the fields named by p.
func checkValueAt(m *MigrationNetwork, p valuePaths) *checkedValue {
	v := &checkedValue{rawRange: m.Range, nExclude: len(m.Exclude)}
	cnPath, rangePath := p.clusterNetwork, p.rng
	var mac *Macvlan
	if m.Macvlan != nil {
		// A macvlan network: the master and mode, no VLAN tag; the cluster network only selects
		// nodes, and may be left out (every node that runs virt-handler is then eligible).
		var merrs field.ErrorList
		mac, merrs = validateMacvlan(m.Macvlan, m.VLAN, p)
		v.errs = append(v.errs, merrs...)
	}
	if m.Macvlan == nil || m.ClusterNetwork != "" {
		cnErrs := validateClusterNetwork(m.ClusterNetwork, cnPath)
		v.clusterNetworkOK = len(cnErrs) == 0
		v.errs = append(v.errs, cnErrs...)
	}
	if m.Macvlan == nil {
		v.errs = append(v.errs, validateVLAN(m.VLAN, m.ClusterNetwork, p.vlan)...)
	}
	rng, rerrs := validateRange(m.Range, rangePath)
	v.errs = append(v.errs, rerrs...)
	if rng.usable {
		uerr, uwarn := checkUnicast(rng.prefix, m.Range, rangePath)
		if uerr != nil {
			rng.clean = false
			v.errs = append(v.errs, uerr)
		}
		if uwarn != "" {
			v.warns = append(v.warns, uwarn)
		}
	}
	mtuErrs := validateMTU(m.MTU, rng, p.mtu)
	v.errs = append(v.errs, mtuErrs...)
	excl, countable, eerrs := validateExcludes(m.Exclude, rng, p.exclude)
	v.errs = append(v.errs, eerrs...)
	v.rangeOK = rng.clean
	if rng.clean && countable {
		v.usable, v.span = usableCount(rng.prefix, excl)
		if v.usable.isZero() {
			v.errs = append(v.errs, field.Invalid(p.exclude, fmt.Sprintf("%d entries", v.nExclude), fmt.Sprintf(
				"the excludes cover every assignable address of range %s (%s addresses minus the first and last); "+
					"remove some excludes or widen the range", rng.prefix, new(big.Int).Add(v.span.big(), big.NewInt(1)))))
		} else {
			v.countable = true
		}
	}
	v.net = Network{MTU: m.MTU, VLAN: m.VLAN, Range: rng.prefix, Exclude: Excludes(excl), Macvlan: mac}
	if v.clusterNetworkOK {
		v.net.ClusterNetwork = m.ClusterNetwork
	}
	if len(v.errs) == 0 {
		sortExcludes(v.net.Exclude)
		if len(v.net.Exclude) == 0 {
			v.net.Exclude = nil
		}
	}
	return v
}

// network is the typed value, nil while any check of the value itself failed.
func (v *checkedValue) network() *Network {
	if v == nil || len(v.errs) > 0 {
		return nil
	}
	n := v.net
	return &n
}

// againstCluster runs the checks that need the cluster (none for cl nil), on the typed parts the
// checks of the value itself let through.
func (v *checkedValue) againstCluster(cl *Cluster, fld *field.Path) (errs field.ErrorList, warnings []string) {
	if cl == nil {
		return nil, nil
	}
	cnPath, rangePath := fld.Child(keyClusterNetwork), fld.Child(keyRange)
	if v.clusterNetworkOK {
		cn := v.net.ClusterNetwork
		if missing, eligible := cl.missingClusterNetwork(cn); len(missing) > 0 {
			errs = append(errs, field.Invalid(cnPath, cn, fmt.Sprintf(
				"cluster network %q is missing on %d of %d eligible nodes (nodes that run virt-handler): %s; "+
					"attach it to them (they must carry the label %s%s=true) or keep virt-handler off them "+
					"with the KubeVirt CR's spec.workloads.nodePlacement.nodeSelector",
				cn, len(missing), eligible, listNodes(missing), ClusterNetworkLabelPrefix, cn)))
		}
	}
	if v.rangeOK {
		if err := checkClusterRanges(v.net.Range, v.rawRange, cl, rangePath); err != nil {
			errs = append(errs, err)
		}
	}
	if v.countable {
		n := v.net // the excludes parsed: what whereabouts may assign is known
		if err := checkNodeAddrs(&n, v.rawRange, cl.Nodes, rangePath); err != nil {
			errs = append(errs, err)
		}
		cerrs, cwarns := checkCapacity(v, cl, rangePath)
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

func validateVLAN(vlan int, clusterNetwork string, fld *field.Path) field.ErrorList {
	if vlan < 0 || vlan > MaxVLAN {
		return field.ErrorList{field.Invalid(fld, vlan, fmt.Sprintf(
			"must be between 0 (untagged) and %d (802.1Q reserves 4095); use the VLAN ID the switch ports carry", MaxVLAN))}
	}
	if clusterNetwork == ManagementClusterNetwork && vlan <= 1 {
		return field.ErrorList{field.Invalid(fld, vlan, fmt.Sprintf(
			"on the %s cluster network, VLAN 0 and 1 are the management network's own untagged traffic (Harvester refuses them too): "+
				"migration addresses there would sit beside the nodes' and the API server's; use a VLAN ID from 2 to %d, or another cluster network",
			ManagementClusterNetwork, MaxVLAN))}
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

// checkCapacity compares the assignable addresses the checks of the value counted with the
// eligible nodes.
func checkCapacity(v *checkedValue, cl *Cluster, rangePath *field.Path) (field.ErrorList, []string) {
	usable := v.usable
	total := new(big.Int).Add(v.span.big(), big.NewInt(1))
	excluded := v.span.sub(uint128{lo: 1}).sub(usable)
	nodes := len(cl.EligibleNodes())
	need := uint128{lo: uint64(nodes)}
	if usable.cmp(need) < 0 {
		return field.ErrorList{field.Invalid(rangePath, v.rawRange, fmt.Sprintf(
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
