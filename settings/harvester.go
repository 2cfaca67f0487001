package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reading the NAD Harvester's own vm-migration-network controller renders (docs/harvester.md),
// for a Harvester mode in which migranet adopts that network instead of rendering its own.

// LabelHarvesterMigrationHash is the label Harvester's vm-migration-network controller puts on the
// NAD it renders (the SHA-1 of the setting's value, which it finds the NAD again by). Only Harvester
// sets it: migranet's own NAD carries Harvester's annotation (AnnotationHarvesterMigrationNetwork)
// but not this label.
const LabelHarvesterMigrationHash = "vm-migration-network.settings.harvesterhci.io/hash"

// CNI configuration keys NetworkFromNAD reads.
const (
	cniKeyType    = "type"
	cniKeyBridge  = "bridge"
	cniKeyVLAN    = "vlan"
	cniKeyMTU     = "mtu"
	cniKeyIPAM    = "ipam"
	cniBridgeType = "bridge"
	// cniMacvlanType is the macvlan plugin's type; cniKeyLinkInContainer its flag for a master
	// in the pod's namespace, cniKeyPlugins a configuration list's chain.
	cniMacvlanType        = "macvlan"
	cniKeyLinkInContainer = "linkInContainer"
	cniKeyPlugins         = "plugins"
	ipamWhere             = "whereabouts"
)

// ipamNarrowing are whereabouts keys that change which addresses a range assigns; a Network cannot
// say them, so a configuration with one is refused rather than misread.
var ipamNarrowing = []string{"range_start", "range_end", "ipRanges"}

const exampleNADConfig = `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,` +
	`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`

// HarvesterMigrationNAD reports whether nad is the one Harvester's vm-migration-network controller
// rendered: Harvester's annotation set to "true" and Harvester's hash label present, and not
// managed by migranet. The annotation alone does not tell: migranet's own NAD carries it too (so
// that Harvester's UI keeps it away from VMs); the hash label is set by Harvester alone, and the
// managed-by check keeps a migranet NAD that somehow also carries the label from being taken for
// Harvester's. The namespace is not judged (Harvester renders into harvester-system); a nil nad is
// not Harvester's.
func HarvesterMigrationNAD(nad *nadv1.NetworkAttachmentDefinition) bool {
	if nad == nil {
		return false
	}
	if nad.Labels[LabelManagedBy] == ManagedBy {
		return false
	}
	return nad.Annotations[AnnotationHarvesterMigrationNetwork] == "true" && nad.Labels[LabelHarvesterMigrationHash] != ""
}

// NetworkFromNAD reads the typed Network from a NAD's spec.config: a bridge CNI configuration with
// whereabouts IPAM, as Harvester's vm-migration-network controller renders it (and as NADConfig
// does), or a macvlan one, as OpenShift Virtualization documents its migration network. It reads:
//
//   - "type" must be "bridge" or "macvlan" and "ipam"."type" "whereabouts";
//   - bridge: ClusterNetwork is "bridge" without its "-br" suffix;
//   - bridge: VLAN is "vlan" as written, 0 when absent. Harvester renders a value's VLAN 0 as 1, so a
//     Harvester NAD never says 0 and a value's 0 and 1 both read back as 1: the NAD cannot tell
//     them apart and NetworkFromNAD does not guess (what VLAN 1 carries on Harvester's bridge and
//     uplink is the bridge plugin's and the network controller's business, not read here);
//   - macvlan: Macvlan.Master is "master", Macvlan.Mode "mode" ("bridge" when absent); no
//     ClusterNetwork (a NAD does not say which nodes have the master: every node that runs
//     virt-handler is taken to), no VLAN ("vlan" is no key of the macvlan plugin, not read);
//   - Range and Exclude are "ipam"."range" and "ipam"."exclude", judged by the value's own checks
//     (family, unicast, size, overlap, inside the range) and returned masked and in canonical order.
//     A range with host bits is refused, as Harvester's webhook refuses it: such a NAD was not
//     rendered from a value Harvester judged. An exclude with host bits is masked, not refused:
//     Harvester's webhook accepts one and whereabouts reads the block it names;
//   - MTU is "mtu", 0 when absent: the bridge's (the master's for macvlan), inherited (Harvester
//     renders none; its network controller adds the uplink's when that is not 1500).
//
// Other keys ("cniVersion", "promiscMode", "mac", other whereabouts options) are not read;
// whereabouts' "range_start", "range_end" and "ipRanges" are refused, as they change the addresses
// assigned. Every error names the field (spec.config.<key>) and what is wrong. It never panics.
//
// A configuration migranet does not read returns a *NotJudgedError (IsNotJudged), not a verdict:
// a plugin list ("plugins"), a type other than bridge and macvlan, an IPAM type other than
// whereabouts, a bridge not named <clusterNetwork>-br (its nodes are not known), a macvlan without
// "master" (the plugin takes each node's default-route interface), with "linkInContainer" (the
// master is looked up in the pod) or in mode "passthru" (one pod holds the whole interface).
// A configuration without "type" or without "ipam" is an error: no plugin, or no address.
func NetworkFromNAD(nad *nadv1.NetworkAttachmentDefinition) (Network, error) {
	if nad == nil {
		return Network{}, errors.New("no NetworkAttachmentDefinition to read a migration network from")
	}
	n, nj, errs := networkFromConfig(nad.Spec.Config, field.NewPath("spec", "config"))
	if nj != nil {
		nj.NAD = NADRef(nad.Namespace, nad.Name)
		return Network{}, nj
	}
	if len(errs) > 0 {
		return Network{}, fmt.Errorf("NetworkAttachmentDefinition %s: %w", NADRef(nad.Namespace, nad.Name),
			BoundErrors(errs).ToAggregate())
	}
	return n, nil
}

// cniFields are the members of a NAD's configuration NetworkFromNAD reads, as decoded.
type cniFields struct {
	typ, bridge, ipamType, rng, master, mode string
	vlan, mtu                                int
	exclude                                  []string
	hasType, hasIPAM, hasIPAMT, hasMaster    bool
	linkInContainer, masterBad               bool
}

// networkFromConfig is NetworkFromNAD on the configuration alone, errors under fld; a
// configuration it does not read returns its NotJudgedError (NAD left empty) and nothing else.
func networkFromConfig(raw string, fld *field.Path) (Network, *NotJudgedError, field.ErrorList) {
	if strings.TrimSpace(raw) == "" {
		return Network{}, nil, field.ErrorList{field.Required(fld, "the NAD has no CNI configuration; expected one such as "+exampleNADConfig)}
	}
	if t := strings.TrimSpace(raw); t[0] != '{' {
		return Network{}, nil, field.ErrorList{field.Invalid(fld, shorten(raw),
			"must be a JSON object, a single CNI plugin configuration such as "+exampleNADConfig)}
	}
	members, errs := decodeObject(raw, fld, exampleNADConfig)
	if members == nil {
		return Network{}, nil, errs
	}
	bad := map[string]bool{} // fields already reported: not judged again
	for _, e := range errs {
		bad[e.Field] = true
	}
	var c cniFields
	paths := valuePaths{clusterNetwork: fld.Child(cniKeyBridge), vlan: fld.Child(cniKeyVLAN), mtu: fld.Child(cniKeyMTU),
		rng: fld.Child(cniKeyIPAM, keyRange), exclude: fld.Child(cniKeyIPAM, keyExclude),
		master: fld.Child(keyMaster), mode: fld.Child(keyMode)}
	fail := func(e *field.Error) {
		if e != nil {
			errs = append(errs, e)
			bad[e.Field] = true
		}
	}
	var plugins bool
	for _, mem := range members {
		var err *field.Error
		switch mem.key {
		case cniKeyType:
			c.hasType = true
			c.typ, err = decodeString(mem.raw, fld.Child(cniKeyType), `"bridge"`)
		case cniKeyBridge:
			c.bridge, err = decodeString(mem.raw, paths.clusterNetwork, `"migration-br"`)
		case cniKeyVLAN:
			c.vlan, err = decodeInt(mem.raw, paths.vlan, "100")
		case cniKeyMTU:
			c.mtu, err = decodeInt(mem.raw, paths.mtu, "9000")
		case keyMaster:
			c.hasMaster = true
			c.master, err = decodeString(mem.raw, paths.master, `"ens5"`)
			c.masterBad = err != nil
		case keyMode:
			c.mode, err = decodeString(mem.raw, paths.mode, `"bridge"`)
		case cniKeyLinkInContainer:
			c.linkInContainer = string(mem.raw) == "true"
		case cniKeyPlugins:
			plugins = true
		case cniKeyIPAM:
			c.hasIPAM = true
			for _, e := range decodeIPAM(mem.raw, fld.Child(cniKeyIPAM), &c) {
				fail(e)
			}
		}
		fail(err)
	}
	if nj := notJudged(&c, plugins, fld); nj != nil {
		return Network{}, nj, nil
	}
	macvlan := c.typ == cniMacvlanType
	if macvlan { // keys of the bridge plugin, not the macvlan plugin's: not read
		c.vlan, c.bridge = 0, ""
		for _, p := range []*field.Path{paths.vlan, paths.clusterNetwork} {
			for i := 0; i < len(errs); i++ {
				if errs[i].Field == p.String() {
					errs = append(errs[:i], errs[i+1:]...)
					i--
				}
			}
			delete(bad, p.String())
		}
	}
	for _, e := range checkCNIKinds(&c, fld) {
		if !underBad(bad, e.Field) {
			fail(e)
		}
	}
	m := &MigrationNetwork{VLAN: c.vlan, Range: c.rng, Exclude: maskExcludes(c.exclude), MTU: c.mtu}
	if macvlan {
		m.Macvlan = &MacvlanValue{Master: c.master, Mode: c.mode}
	} else {
		cn, berr := clusterNetworkOfBridge(c.bridge, paths.clusterNetwork)
		if !underBad(bad, paths.clusterNetwork.String()) {
			fail(berr)
		}
		m.ClusterNetwork = cn
	}
	v := checkValueAt(m, paths)
	for _, e := range v.errs {
		if underBad(bad, e.Field) {
			continue
		}
		if e.Field == paths.clusterNetwork.String() { // judged on the cluster network the bridge names
			e.BadValue = shorten(c.bridge)
			e.Detail = fmt.Sprintf("names cluster network %q, which %s", shorten(m.ClusterNetwork), e.Detail)
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return Network{}, nil, errs
	}
	return *v.network(), nil, nil
}

// notJudged says why a configuration is one migranet does not read, or returns nil: a plugin
// list, another plugin or IPAM type, a bridge whose nodes are not known, a macvlan whose master
// each node picks for itself, looks up in the pod, or hands over whole.
func notJudged(c *cniFields, plugins bool, fld *field.Path) *NotJudgedError {
	switch {
	case plugins:
		return &NotJudgedError{Field: fld.Child(cniKeyPlugins).String(), Reason: "a plugin list (conflist): what the migration " +
			"interface becomes depends on every plugin of the chain; migranet reads a single bridge or macvlan configuration"}
	case c.hasType && c.typ != "" && c.typ != cniBridgeType && c.typ != cniMacvlanType:
		return &NotJudgedError{Field: fld.Child(cniKeyType).String(), Value: shorten(c.typ), Reason: `migranet reads the ` +
			`"bridge" and "macvlan" CNI plugins' configurations only; a network of another plugin is neither checked nor refused`}
	case c.hasIPAMT && c.ipamType != "" && c.ipamType != ipamWhere:
		return &NotJudgedError{Field: fld.Child(cniKeyIPAM, cniKeyType).String(), Value: shorten(c.ipamType), Reason: "the " +
			"addresses do not come from a whereabouts range, so migranet cannot count them, see which node holds which, or free " +
			"a leaked one"}
	case c.typ == cniBridgeType && c.bridge != "" && !strings.HasSuffix(c.bridge, bridgeSuffix):
		return &NotJudgedError{Field: fld.Child(cniKeyBridge).String(), Value: shorten(c.bridge), Reason: "not the bridge of a " +
			"Harvester cluster network (<clusterNetwork>" + bridgeSuffix + "), so which nodes carry it is not known"}
	case c.typ != cniMacvlanType:
		return nil
	case (!c.hasMaster || c.master == "") && !c.masterBad:
		return &NotJudgedError{Field: fld.Child(keyMaster).String(), Reason: "without a master the macvlan plugin takes the " +
			"interface of each node's default route, which migranet cannot see; name the interface"}
	case c.linkInContainer:
		return &NotJudgedError{Field: fld.Child(cniKeyLinkInContainer).String(), Value: "true", Reason: "the master is looked " +
			"up in the pod's network namespace, not the node's"}
	case c.mode == MacvlanModePassthru:
		return &NotJudgedError{Field: fld.Child(keyMode).String(), Value: c.mode, Reason: "passthru hands the whole master to " +
			"one pod per node; migranet renders and judges bridge, private and vepa only"}
	}
	return nil
}

// decodeIPAM reads the whereabouts IPAM object into c.
func decodeIPAM(raw json.RawMessage, fld *field.Path, c *cniFields) field.ErrorList {
	if rawKind(raw) != "an object" {
		return field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON object (the IPAM configuration), not %s; e.g. %s", rawKind(raw),
			`{"type":"whereabouts","range":"192.168.100.0/24"}`))}
	}
	members, errs := decodeObject(string(raw), fld, exampleNADConfig)
	for _, mem := range members {
		p := fld.Child(shorten(mem.key))
		var err *field.Error
		switch mem.key {
		case cniKeyType:
			c.hasIPAMT = true
			c.ipamType, err = decodeString(mem.raw, p, `"whereabouts"`)
		case keyRange:
			c.rng, err = decodeString(mem.raw, p, `"192.168.100.0/24"`)
		case keyExclude:
			var lerrs field.ErrorList
			c.exclude, lerrs = decodeStringList(mem.raw, p, `"192.168.100.1/32"`)
			errs = append(errs, lerrs...)
		default:
			for _, k := range ipamNarrowing {
				if mem.key == k {
					err = field.Forbidden(p, fmt.Sprintf(
						"narrows or adds to the addresses whereabouts assigns, which a vm-migration-network value cannot say; "+
							"only \"range\" and \"exclude\" are read (Harvester renders nothing else), remove %q", k))
				}
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkCNIKinds judges the plugin and IPAM types: a bridge or macvlan with whereabouts IPAM (any
// other type was found not judged before).
func checkCNIKinds(c *cniFields, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !c.hasType || c.typ == "" {
		errs = append(errs, field.Required(fld.Child(cniKeyType), `set the CNI plugin type; a migration network is a "bridge" or "macvlan" configuration`))
	}
	switch {
	case !c.hasIPAM:
		return append(errs, field.Required(fld.Child(cniKeyIPAM),
			`set the IPAM configuration, e.g. {"type":"whereabouts","range":"192.168.100.0/24"}; `+
				"without it the migration interface would get no address"))
	case !c.hasIPAMT || c.ipamType == "":
		return append(errs, field.Required(fld.Child(cniKeyIPAM, cniKeyType), `set the IPAM type to "whereabouts"`))
	case c.ipamType != ipamWhere:
		return append(errs, field.Invalid(fld.Child(cniKeyIPAM, cniKeyType), shorten(c.ipamType),
			`is not whereabouts; a migration network takes its addresses from a whereabouts range, set "whereabouts"`))
	}
	return errs
}

// clusterNetworkOfBridge is the cluster network whose bridge is bridge (<name>-br).
func clusterNetworkOfBridge(bridge string, fld *field.Path) (string, *field.Error) {
	if bridge == "" {
		return "", field.Required(fld, `set the bridge, "<clusterNetwork>-br", e.g. "migration-br"`)
	}
	cn, ok := strings.CutSuffix(bridge, bridgeSuffix)
	if !ok || cn == "" {
		return "", field.Invalid(fld, shorten(bridge), fmt.Sprintf(
			"is not the bridge of a Harvester cluster network, which is named <clusterNetwork>%s, e.g. \"migration-br\"", bridgeSuffix))
	}
	return cn, nil
}

// maskExcludes clears the host bits of excludes written as a CIDR (whereabouts reads the block
// they name); anything else is left for the value's checks to judge.
func maskExcludes(excl []string) []string {
	if excl == nil {
		return nil
	}
	out := make([]string, len(excl))
	for i, s := range excl {
		out[i] = s
		if p, bare, err := parsePrefixOrAddr(s); err == nil && !bare && p != p.Masked() {
			out[i] = p.Masked().String()
		}
	}
	return out
}

// underBad reports whether path is, or lies under, a field already reported.
func underBad(bad map[string]bool, path string) bool {
	for p := path; p != ""; {
		if bad[p] {
			return true
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			return false
		}
		p = p[:i]
	}
	return false
}

// harvesterValue is the layout of Harvester's vm-migration-network value: its keys, no mtu.
type harvesterValue struct {
	ClusterNetwork string   `json:"clusterNetwork"`
	VLAN           int      `json:"vlan"`
	Range          string   `json:"range"`
	Exclude        []string `json:"exclude,omitempty"`
}

// HarvesterValue is the value of Harvester's own vm-migration-network setting for n:
// {"clusterNetwork":...,"vlan":N,"range":R,"exclude":[...]}, exclude omitted when empty, range and
// excludes canonical. Harvester's value has no MTU: n.MTU is left out (Harvester's network
// controller puts the uplink's MTU on the NAD instead). A macvlan network has none: "".
func HarvesterValue(n Network) string {
	if n.Macvlan != nil {
		return ""
	}
	b, err := json.Marshal(harvesterValue{ClusterNetwork: n.ClusterNetwork, VLAN: n.VLAN, Range: n.Range.String(),
		Exclude: n.Exclude.Strings()})
	if err != nil { // cannot happen for strings and ints
		return ""
	}
	return string(b)
}
