package delegate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Delegate is one network's configuration as Multus runs it: a single plugin, or a list.
type Delegate struct {
	// Name is the network's name: the config's "name", else the NAD's (Load).
	Name string
	// CNIVersion is the config's "cniVersion" (the list's, for a list).
	CNIVersion string
	// List: the config is a plugin list, run through libcni's list calls.
	List bool
	// DisableCheck is the list's "disableCheck": CHECK does nothing.
	DisableCheck bool
	// Plugins in chain order; a single plugin's config is the whole config.
	Plugins []Plugin
}

// Plugin is one plugin of the chain.
type Plugin struct {
	// Type is the plugin binary ("type").
	Type string
	// Conf is its configuration as written in the NAD.
	Conf map[string]any
}

// Load reads a NAD's spec.config as Multus resolves it into a delegate. nadName becomes the
// config's "name" when it has none or an empty one. A config with a "type" is one plugin (even with
// a "plugins" beside it, as Multus decides); one without must list its chain in "plugins", each
// with a "type". Errors name the field and what to write instead.
func Load(config, nadName string) (*Delegate, error) {
	var conf map[string]any
	if err := json.Unmarshal([]byte(config), &conf); err != nil {
		return nil, fmt.Errorf("spec.config: not a JSON object (%w): write the network's CNI config as one JSON object", err)
	}
	if n, ok := conf["name"]; !ok || n == "" {
		conf["name"] = nadName
	}
	name, ok := conf["name"].(string)
	if !ok {
		return nil, fmt.Errorf(`spec.config.name: %T, not a string: name the network with a string, or leave "name" out for the NAD's name`, conf["name"])
	}
	version, ok := conf["cniVersion"].(string)
	if _, present := conf["cniVersion"]; present && !ok {
		return nil, fmt.Errorf(`spec.config.cniVersion: %T, not a string: write the CNI version as a string, e.g. "1.0.0"`, conf["cniVersion"])
	}
	d := &Delegate{Name: name, CNIVersion: version}
	if t, _ := conf["type"].(string); t != "" {
		if err := checkType("spec.config.type", t); err != nil {
			return nil, err
		}
		d.Plugins = []Plugin{{Type: t, Conf: conf}}
		return d, nil
	}
	raw, present := conf["plugins"]
	if !present {
		return nil, fmt.Errorf(`spec.config: neither "type" nor "plugins": name the CNI plugin in "type", or list the chain in "plugins"`)
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf(`spec.config.plugins: %T, not a list: write the chain as a JSON array of plugin configs`, raw)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf(`spec.config.plugins: empty: list at least one plugin config, the one that makes the interface first`)
	}
	if dc, present := conf["disableCheck"]; present {
		b, err := readBool(dc)
		if err != nil {
			return nil, fmt.Errorf(`spec.config.disableCheck: %w: write true or false`, err)
		}
		d.DisableCheck = b
	}
	d.List = true
	for i, item := range list {
		field := fmt.Sprintf("spec.config.plugins[%d]", i)
		pc, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`%s: %T, not an object: write each plugin's config as a JSON object with its "type"`, field, item)
		}
		t, _ := pc["type"].(string)
		if t == "" {
			return nil, fmt.Errorf(`%s.type: missing: name the plugin binary of this step, e.g. "bridge", "tuning" or "bandwidth"`, field)
		}
		if err := checkType(field+".type", t); err != nil {
			return nil, err
		}
		d.Plugins = append(d.Plugins, Plugin{Type: t, Conf: pc})
	}
	return d, nil
}

// checkType refuses a plugin type that is a path: it names a binary in the plugin directory.
func checkType(field, t string) error {
	if strings.ContainsAny(t, `/\`) || strings.HasPrefix(t, ".") {
		return fmt.Errorf("%s: %q is a path: name the plugin binary alone (it is looked up in the plugin directory)", field, t)
	}
	return nil
}

// readBool reads a boolean as libcni reads the list's flags: true/false, or the strings.
func readBool(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("%v is not a boolean", v)
}

// Main is the plugin that makes the interface: the first of the chain (the ones after it adjust
// what it made: tuning, bandwidth, portmap, sbr).
func (d *Delegate) Main() Plugin { return d.Plugins[0] }

// Find returns the first plugin of type t after the main one, if any.
func (d *Delegate) Find(t string) (Plugin, bool) {
	for _, p := range d.Plugins[1:] {
		if p.Type == t {
			return p, true
		}
	}
	return Plugin{}, false
}

// JSON is the plugin's configuration as written.
func (p Plugin) JSON() string {
	b, _ := json.Marshal(p.Conf) // decoded from JSON: always encodes
	return string(b)
}
