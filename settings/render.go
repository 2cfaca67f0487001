package settings

import (
	"encoding/json"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metadata migranet puts on the NetworkAttachmentDefinition it renders.
const (
	// NADNamePrefix + the first NADHashChars hex digits of the value's hash names the NAD.
	NADNamePrefix = "vm-migration-network-"
	NADHashChars  = 10

	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "migranet"
	// LabelHash holds HashLabelValue(hash): the first 63 hex digits of the SHA-256 (a label value
	// is at most 63 characters). AnnotationHash holds all 64.
	LabelHash      = "migranet.io/hash"
	AnnotationHash = "migranet.io/hash"
	// LabelRole says what the NAD is for, to filter on: kubectl get net-attach-def -A -l
	// migranet.io/role=migration.
	LabelRole     = "migranet.io/role"
	RoleMigration = "migration"
	// AnnotationSystemNetwork tells UIs the NAD is infrastructure, not a network to attach VMs to.
	AnnotationSystemNetwork = "migranet.io/system-network"
	// AnnotationHarvesterMigrationNetwork is the annotation Harvester puts on its own
	// vm-migration-network NAD ("true"); Harvester treats NADs carrying it as not selectable or
	// hot-pluggable for VMs.
	AnnotationHarvesterMigrationNetwork = "vm-migration-network.settings.harvesterhci.io"

	cniVersion = "0.3.1"
)

// NADName is the NetworkAttachmentDefinition name for a value hash: "vm-migration-network-" + its
// first 10 hex digits (all of it when shorter).
func NADName(hash string) string {
	if len(hash) > NADHashChars {
		hash = hash[:NADHashChars]
	}
	return NADNamePrefix + hash
}

// NADRef is how a PathReport names the network its probes ran on: the NAD as namespace/name, as
// Multus writes it in a pod's network-status. The readiness snapshot and the setting's effective
// value give the NAD's name alone, in the KubeVirt namespace; "" (no migration network) stays "".
func NADRef(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}

// HashLabelValue fits a hash into a label value (at most 63 characters) by keeping its prefix.
func HashLabelValue(hash string) string {
	if len(hash) > 63 {
		return hash[:63]
	}
	return hash
}

// bridgeConf is the bridge CNI configuration, fields in output order.
type bridgeConf struct {
	CNIVersion  string   `json:"cniVersion"`
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	PromiscMode bool     `json:"promiscMode"`
	VLAN        int      `json:"vlan,omitempty"`
	MTU         int      `json:"mtu,omitempty"`
	IPAM        ipamConf `json:"ipam"`
}

type ipamConf struct {
	Type    string   `json:"type"`
	Range   string   `json:"range"`
	Exclude []string `json:"exclude,omitempty"`
}

// NADConfig is the spec.config of the rendered NAD:
// {"cniVersion":"0.3.1","type":"bridge","bridge":"<cn>-br","promiscMode":true,"vlan":N,"mtu":N,
// "ipam":{"type":"whereabouts","range":R,"exclude":[...]}}. vlan is omitted when 0 (the bridge
// plugin treats a missing vlan and vlan 0 alike: no tagging), mtu when 0 (inherit), exclude when
// empty. Range and excludes are the typed value's, in canonical form and order, so the bytes
// depend only on the canonical value.
//
// A macvlan network renders {"cniVersion":"0.3.1","type":"macvlan","master":M,"mode":D,"mtu":N,
// "ipam":{...}} (mtu omitted when 0: the master's), the IPAM alike.
func NADConfig(n *Network) string {
	if n == nil {
		return ""
	}
	if n.Macvlan != nil {
		b, err := json.Marshal(macvlanConf{CNIVersion: cniVersion, Type: cniMacvlanType, Master: n.Macvlan.Master,
			Mode: n.Macvlan.Mode, MTU: n.MTU,
			IPAM: ipamConf{Type: ipamWhere, Range: n.Range.String(), Exclude: n.Exclude.Strings()}})
		if err != nil { // cannot happen for strings and ints
			return ""
		}
		return string(b)
	}
	b, err := json.Marshal(bridgeConf{
		CNIVersion:  cniVersion,
		Type:        "bridge",
		Bridge:      BridgeName(n.ClusterNetwork),
		PromiscMode: true,
		VLAN:        n.VLAN,
		MTU:         n.MTU,
		IPAM:        ipamConf{Type: "whereabouts", Range: n.Range.String(), Exclude: n.Exclude.Strings()},
	})
	if err != nil { // cannot happen for strings, ints and bools
		return ""
	}
	return string(b)
}

// RenderNAD renders the NetworkAttachmentDefinition of e's network in namespace (KubeVirt's), as a
// pure function of its canonical value: name e.NAD, labels managed-by, hash and role, annotations
// full hash, system network and Harvester's migration-network marker, spec.config NADConfig.
// Validate the network first; RenderNAD renders whatever it is given. Disabled renders nil.
func RenderNAD(e Effective, namespace string) *nadv1.NetworkAttachmentDefinition {
	m := e.Network
	if m == nil {
		return nil
	}
	hash := e.Hash
	return &nadv1.NetworkAttachmentDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: nadv1.SchemeGroupVersion.String(), Kind: "NetworkAttachmentDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      e.NAD,
			Namespace: namespace,
			Labels: map[string]string{
				LabelManagedBy: ManagedBy,
				LabelHash:      HashLabelValue(hash),
				LabelRole:      RoleMigration,
			},
			Annotations: map[string]string{
				AnnotationHash:                      hash,
				AnnotationSystemNetwork:             "true",
				AnnotationHarvesterMigrationNetwork: "true",
			},
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: NADConfig(m)},
	}
}

// MTUOfConfig is the "mtu" of a NAD's spec.config, 0 when it has none or does not parse: the
// frame size the probe agents fill.
func MTUOfConfig(config string) int {
	var c struct {
		MTU int `json:"mtu"`
	}
	if json.Unmarshal([]byte(config), &c) != nil || c.MTU < 0 {
		return 0
	}
	return c.MTU
}
