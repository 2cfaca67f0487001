package main

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

// harvesterGroup is the API group of Harvester's own Settings (settings.harvesterhci.io).
const harvesterGroup = "harvesterhci.io"

// isHarvesterSetting reports whether o is one of Harvester's own Settings.
func isHarvesterSetting(o object) bool {
	return o.group == harvesterGroup && o.kind == "Setting"
}

// decodeHarvesterSetting reads Harvester's vm-migration-network Setting as the migranet Setting
// of the same value, so migranet's rules judge it. Harvester's controller acts on value alone (an
// empty value rolls back to the pod network; default is not read: docs/harvester.md), so default
// is left out. Its value has no mtu: a value naming one gets a warning, since Harvester's NAD
// takes the MTU of the cluster network's uplink instead. skip says why another Harvester Setting
// is not judged.
func decodeHarvesterSetting(o object) (d settingDoc, warns []string, skip string) {
	var h struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Value any `json:"value"`
	}
	if err := json.Unmarshal(o.raw, &h); err != nil {
		return settingDoc{name: "<unnamed>", where: o.where, apiGroup: harvesterGroup,
			errs: field.ErrorList{field.Invalid(field.NewPath("object"), shortText(o.raw), err.Error())}}, nil, ""
	}
	if h.Metadata.Name != v1beta1.MigrationNetwork {
		return settingDoc{}, nil, fmt.Sprintf("Harvester setting %q (only %s is judged)", h.Metadata.Name, v1beta1.MigrationNetwork)
	}
	d = settingDoc{name: h.Metadata.Name, where: o.where, apiGroup: harvesterGroup}
	value, ok := h.Value.(string)
	if h.Value != nil && !ok {
		d.errs = field.ErrorList{field.TypeInvalid(field.NewPath("value"), h.Value,
			"must be a JSON string: Harvester's value is a string holding JSON, e.g. value: '{\"clusterNetwork\":\"vm-mig\",\"vlan\":100,\"range\":\"192.168.100.0/24\"}'")}
		return d, nil, ""
	}
	d.setting = &v1beta1.Setting{Value: value}
	d.setting.Name = h.Metadata.Name
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(value), &fields) == nil {
		if _, ok := fields["mtu"]; ok {
			warns = append(warns, "value.mtu: Harvester does not read mtu: its NAD takes the MTU of the cluster network's uplink "+
				"(the VlanConfig's linkAttributes.mtu); set it there, or migranet's probes and this check assume an MTU the network may not carry")
		}
	}
	return d, warns, ""
}
