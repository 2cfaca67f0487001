package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A migration network carried by the macvlan CNI plugin over a named node interface (the shape
// OpenShift Virtualization documents for its migration network), as opposed to Harvester's bridge
// over a cluster network. Facts from containernetworking/plugins v1.9.1, plugins/main/macvlan
// (loadConf, modeFromString, createMacvlan): "master" is looked up by name in the node's network
// namespace (the pod's only with "linkInContainer"), an empty one defaults to the interface of the
// node's default route; "mode" is "bridge" (also for ""), "private", "vepa" or "passthru"; "mtu"
// must lie in [0, the master's MTU], 0 inheriting the master's.

// Macvlan modes of the CNI plugin (modeFromString).
const (
	MacvlanModeBridge   = "bridge"
	MacvlanModePrivate  = "private"
	MacvlanModeVEPA     = "vepa"
	MacvlanModePassthru = "passthru"
)

// MacvlanModes are the modes a value may ask for: every mode carries frames between nodes (each
// leaves through the master to the switch), they differ only in traffic between two macvlans of
// one master on the same node, which a migration never uses (source and target run on different
// nodes). passthru is refused: it hands the whole master to a single macvlan (the kernel allows
// one per master in that mode), so a second pod on the node joining the migration network (a
// virt-handler rollout that starts the new pod first, KubeVirt's synchronization controller of
// decentralized migrations) cannot attach, and the node's own traffic on that interface stops.
var MacvlanModes = []string{MacvlanModeBridge, MacvlanModePrivate, MacvlanModeVEPA}

// JSON keys of the value's "macvlan" object (and of a macvlan CNI configuration).
const (
	keyMacvlan = "macvlan"
	keyMaster  = "master"
	keyMode    = "mode"
)

var macvlanKeys = []string{keyMaster, keyMode}

const exampleMacvlan = `{"master":"ens5","mode":"bridge"}`

// Macvlan says that a Network is carried by the macvlan CNI plugin over a node interface rather
// than by Harvester's bridge.
type Macvlan struct {
	// Master is the node interface the macvlan sits on, by name (the same name on every node).
	Master string
	// Mode is one of MacvlanModes, never "" in a Network (a value without one is "bridge").
	Mode string
}

// MacvlanValue is the "macvlan" object of a vm-migration-network value.
type MacvlanValue struct {
	// Master is the node interface the plugin puts migration0 on, e.g. "ens5" or a VLAN
	// interface "ens5.100".
	Master string `json:"master"`
	// Mode is the macvlan mode, "bridge" when empty.
	Mode string `json:"mode,omitempty"`
}

// decodeMacvlan decodes the value's "macvlan" object strictly; null reads as nil.
func decodeMacvlan(raw []byte, fld *field.Path) (*MacvlanValue, field.ErrorList) {
	if isNull(raw) {
		return nil, nil
	}
	if rawKind(raw) != "an object" { // still a macvlan network: its other checks keep to its shape
		return &MacvlanValue{}, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON object naming the node interface, not %s; e.g. %s", rawKind(raw), exampleMacvlan))}
	}
	members, errs := decodeObject(string(raw), fld, exampleMacvlan)
	mv := &MacvlanValue{}
	for _, mem := range members {
		p := fld.Child(shorten(mem.key))
		var err *field.Error
		switch mem.key {
		case keyMaster:
			mv.Master, err = decodeString(mem.raw, p, `"ens5"`)
		case keyMode:
			mv.Mode, err = decodeString(mem.raw, p, `"bridge"`)
		default:
			err = field.NotSupported(p, shorten(mem.key), macvlanKeys)
			err.Detail = "unknown key of the macvlan object; " + err.Detail
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return mv, errs
}

// validateMacvlan checks the macvlan object of a value (master, mode) and that no VLAN tag is
// asked for beside it; the typed Macvlan when it passes.
func validateMacvlan(mv *MacvlanValue, vlan int, p valuePaths) (*Macvlan, field.ErrorList) {
	var errs field.ErrorList
	if vlan != 0 {
		errs = append(errs, field.Forbidden(p.vlan, fmt.Sprintf(
			"a macvlan network is not tagged by its plugin (the macvlan plugin has no VLAN setting): remove %q and name a VLAN "+
				"interface as the master instead, e.g. %q for VLAN %d on ens5", keyVLAN, fmt.Sprintf("ens5.%d", vlan), vlan)))
	}
	errs = append(errs, ValidateInterfaceName(mv.Master, p.master)...)
	mode, merr := macvlanMode(mv.Mode, p.mode)
	if merr != nil {
		errs = append(errs, merr)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &Macvlan{Master: mv.Master, Mode: mode}, nil
}

// macvlanMode is the canonical mode of a written one ("" is bridge).
func macvlanMode(mode string, fld *field.Path) (string, *field.Error) {
	switch mode {
	case "", MacvlanModeBridge:
		return MacvlanModeBridge, nil
	case MacvlanModePrivate, MacvlanModeVEPA:
		return mode, nil
	case MacvlanModePassthru:
		return "", field.Invalid(fld, mode, "passthru gives the whole master to one macvlan (one per interface), so a second pod "+
			"on a node cannot join the migration network (a virt-handler rollout, KubeVirt's synchronization controller) and the "+
			"node's own traffic on that interface stops; use \"bridge\" (the default), \"private\" or \"vepa\"")
	}
	e := field.NotSupported(fld, shorten(mode), MacvlanModes)
	e.Detail = "is not a macvlan mode of the CNI plugin; " + e.Detail + " (\"bridge\" when omitted)"
	return "", e
}

// ValidateInterfaceName checks name as the Linux kernel checks a network interface's name
// (dev_valid_name): not empty, at most 15 bytes (IFNAMSIZ minus its NUL), not "." or "..", no
// '/', ':' or whitespace; control characters are refused too (a NUL would cut it short).
func ValidateInterfaceName(name string, fld *field.Path) field.ErrorList {
	const fix = `name the node interface the migration network leaves by, as "ip link" lists it, e.g. "ens5", ` +
		`"bond0" or the VLAN interface "ens5.100"; it must have that name on every node`
	if name == "" {
		return field.ErrorList{field.Required(fld, fix+" (without it the plugin takes the interface of the node's default "+
			"route, the management network)")}
	}
	var why string
	switch {
	case len(name) > maxIfNameLen:
		why = fmt.Sprintf("is %d bytes long; Linux interface names are at most %d", len(name), maxIfNameLen)
	case name == "." || name == "..":
		why = "is not an interface name"
	case strings.ContainsAny(name, "/:"):
		why = "holds '/' or ':', which Linux interface names cannot"
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		why = "holds whitespace or a control character, which Linux interface names cannot"
	default:
		return nil
	}
	return field.ErrorList{field.Invalid(fld, shorten(name), why+"; "+fix)}
}

// canonicalMacvlanJSON is the layout of a macvlan network's Canonical: "macvlan" first (no bridge
// value has it, so no macvlan value hashes like a bridge one), clusterNetwork only when set, no
// vlan.
type canonicalMacvlanJSON struct {
	Macvlan        MacvlanValue `json:"macvlan"`
	ClusterNetwork string       `json:"clusterNetwork,omitempty"`
	Range          string       `json:"range"`
	Exclude        []string     `json:"exclude,omitempty"`
	MTU            int          `json:"mtu,omitempty"`
}

// macvlanConf is the macvlan CNI configuration migranet renders, fields in output order.
type macvlanConf struct {
	CNIVersion string   `json:"cniVersion"`
	Type       string   `json:"type"`
	Master     string   `json:"master"`
	Mode       string   `json:"mode"`
	MTU        int      `json:"mtu,omitempty"`
	IPAM       ipamConf `json:"ipam"`
}
