package sim

import (
	"encoding/json"
	"fmt"

	"github.com/migranet/migranet/test/nodenet/delegate"
)

// chainConf is what the simulators read of a NAD's config that may be a plugin list (a
// conflist, as Multus runs it: delegate.Load): the main plugin, the one that makes the interface
// and holds the IPAM (a list's first; a single plugin's whole config), and the MTU a later
// tuning plugin sets on that interface (its "mtu"; 0: none).
type chainConf struct {
	main      string
	tuningMTU int
}

// readChain splits config. A config without "type" and "plugins" is read as one plugin (the
// simulators' own tests give bare ipam objects).
func readChain(config string) (chainConf, error) {
	var probe struct {
		Type    string          `json:"type"`
		Plugins json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(config), &probe); err != nil {
		return chainConf{}, fmt.Errorf("failed to load netconf: %v", err)
	}
	if probe.Type != "" || probe.Plugins == nil {
		return chainConf{main: config}, nil
	}
	d, err := delegate.Load(config, "")
	if err != nil {
		return chainConf{}, err
	}
	c := chainConf{main: d.Main().JSON()}
	if t, ok := d.Find("tuning"); ok {
		if mtu, ok := t.Conf["mtu"].(float64); ok {
			c.tuningMTU = int(mtu)
		}
	}
	return c, nil
}

// withoutVLAN is config with the main plugin's "vlan" removed (a list keeps its other plugins).
func withoutVLAN(config string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(config), &m); err != nil {
		return "", err
	}
	target := m
	if t, _ := m["type"].(string); t == "" {
		if list, ok := m["plugins"].([]any); ok && len(list) > 0 {
			if first, ok := list[0].(map[string]any); ok {
				target = first
			}
		}
	}
	delete(target, "vlan")
	b, err := json.Marshal(m)
	return string(b), err
}
