package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings"
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

// harvesterNetworkGroup is the API group of Harvester's network controller (VlanConfig,
// ClusterNetwork).
const harvesterNetworkGroup = "network.harvesterhci.io"

// readUplink reads a VlanConfig or ClusterNetwork of Harvester's network controller into up:
// inputs of the uplink MTU checks, not judged themselves. It reports whether o is one; an error
// is an object of those kinds that cannot be read. A second object of the same kind and name is
// ignored with a note.
func readUplink(o object, up *settings.Uplinks, note func(string, ...any)) (bool, error) {
	if o.group != harvesterNetworkGroup || o.kind != "VlanConfig" && o.kind != "ClusterNetwork" {
		return false, nil
	}
	var obj struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			ClusterNetwork string `json:"clusterNetwork"`
			Uplink         struct {
				LinkAttributes struct {
					MTU int `json:"mtu"`
				} `json:"linkAttributes"`
			} `json:"uplink"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(o.raw, &obj); err != nil {
		return true, fmt.Errorf("%s: %s: %v", o.where, o.kind, err)
	}
	name, ann := obj.Metadata.Name, obj.Metadata.Annotations
	if o.kind == "ClusterNetwork" {
		raw, ok := ann[settings.AnnotationUplinkMTU]
		if !ok {
			note("%s: ClusterNetwork %q has no %s annotation: read as none", o.where, name, settings.AnnotationUplinkMTU)
			return true, nil
		}
		mtu, err := strconv.Atoi(raw)
		if err != nil {
			return true, fmt.Errorf("%s: ClusterNetwork %q: annotation %s: %q is not an integer MTU", o.where, name, settings.AnnotationUplinkMTU, raw)
		}
		if _, dup := up.Annotated[name]; dup {
			note("%s: ignoring another ClusterNetwork %q", o.where, name)
			return true, nil
		}
		if up.Annotated == nil {
			up.Annotated = map[string]int{}
		}
		up.Annotated[name] = mtu
		note("%s: ClusterNetwork %q read for its uplink MTU (%d), not judged itself", o.where, name, mtu)
		return true, nil
	}
	if obj.Spec.ClusterNetwork == "" {
		return true, fmt.Errorf("%s: VlanConfig %q has no spec.clusterNetwork", o.where, name)
	}
	vc := settings.Uplink{VlanConfig: name, ClusterNetwork: obj.Spec.ClusterNetwork, MTU: obj.Spec.Uplink.LinkAttributes.MTU}
	if vc.MTU < 0 {
		return true, fmt.Errorf("%s: VlanConfig %q: spec.uplink.linkAttributes.mtu %d is negative", o.where, name, vc.MTU)
	}
	if raw, ok := ann[settings.AnnotationMatchedNodes]; ok {
		vc.Nodes = []string{}
		if err := json.Unmarshal([]byte(raw), &vc.Nodes); err != nil {
			return true, fmt.Errorf("%s: VlanConfig %q: annotation %s is not a JSON list of node names: %v", o.where, name, settings.AnnotationMatchedNodes, err)
		}
	}
	for _, seen := range up.VlanConfigs {
		if seen.VlanConfig == name {
			note("%s: ignoring another VlanConfig %q", o.where, name)
			return true, nil
		}
	}
	up.VlanConfigs = append(up.VlanConfigs, vc)
	note("%s: VlanConfig %q read for the uplink MTU of cluster network %q, not judged itself", o.where, name, vc.ClusterNetwork)
	return true, nil
}

// checkUplinks judges the value in force of d against the uplinks read: Harvester's setting by
// its cluster network's VlanConfigs (settings.Uplinks.CheckHarvesterUplinks), migranet's by its mtu
// (CheckUplinkMTU). n is the value's typed network, nil when it is disabled or invalid.
func checkUplinks(d settingDoc, n *settings.Network, up settings.Uplinks) field.ErrorList {
	fld := settings.EffectivePath(d.setting)
	if d.apiGroup == harvesterGroup {
		return up.CheckHarvesterUplinks(n, fld)
	}
	return up.CheckUplinkMTU(n, fld)
}
