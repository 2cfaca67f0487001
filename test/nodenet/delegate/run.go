package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Exec runs one plugin binary with a CNI command and its config on stdin, and returns what it
// printed (the result of an ADD). A plugin's own failure is an error.
type Exec func(ctx context.Context, pluginType, command string, stdin []byte) ([]byte, error)

// Stdin is what plugin i is given: its config with the delegate's "name" and "cniVersion" and,
// when prevResult is set, "prevResult" (libcni buildOneConfig). The NAD's config is not changed.
func (d *Delegate) Stdin(i int, prevResult []byte) ([]byte, error) {
	conf := make(map[string]any, len(d.Plugins[i].Conf)+3)
	for k, v := range d.Plugins[i].Conf {
		conf[k] = v
	}
	conf["name"] = d.Name
	conf["cniVersion"] = d.CNIVersion
	if prevResult != nil {
		conf["prevResult"] = json.RawMessage(prevResult)
	}
	return json.Marshal(conf)
}

// describe is a plugin as libcni names it in an error (pluginDescription): its type, and its own
// "name" when it has one.
func (p Plugin) describe() string {
	out := fmt.Sprintf("type=%q", p.Type)
	if n, _ := p.Conf["name"].(string); n != "" {
		out += fmt.Sprintf(" name=%q", n)
	}
	return out
}

// Add runs ADD through the chain in order, each plugin given the previous one's result, and
// returns the last result. A failing plugin ends it; what the plugins before it did stays until a
// DEL (libcni AddNetworkList undoes nothing; Multus' Attach does). A list's failure names the
// plugin as libcni does: `plugin type="tuning" failed (add): ...`.
func (d *Delegate) Add(ctx context.Context, exec Exec) ([]byte, error) {
	var result []byte
	for i, p := range d.Plugins {
		stdin, err := d.Stdin(i, result)
		if err != nil {
			return nil, err
		}
		out, err := exec(ctx, p.Type, "ADD", stdin)
		if err != nil {
			if d.List {
				return nil, fmt.Errorf("plugin %s failed (add): %w", p.describe(), err)
			}
			return nil, err
		}
		if !json.Valid(out) {
			return nil, fmt.Errorf("plugin %s printed no JSON result on ADD: %q", p.describe(), out)
		}
		result = out
	}
	return result, nil
}

// Del runs DEL through the chain in reverse order. From CNI 0.4.0 on each plugin is given cached,
// the result of the delegate's ADD (none when that ADD failed). The first failing plugin ends it
// (libcni DelNetworkList).
func (d *Delegate) Del(ctx context.Context, exec Exec, cached []byte) error {
	if !d.atLeast040() {
		cached = nil
	}
	for i := len(d.Plugins) - 1; i >= 0; i-- {
		p := d.Plugins[i]
		stdin, err := d.Stdin(i, cached)
		if err != nil {
			return err
		}
		if _, err := exec(ctx, p.Type, "DEL", stdin); err != nil {
			if d.List {
				return fmt.Errorf("plugin %s failed (delete): %w", p.describe(), err)
			}
			return err
		}
	}
	return nil
}

// ErrCheckNotSupported is Check's error below CNI 0.4.0, which brought CHECK.
var ErrCheckNotSupported = errors.New("does not support the CHECK command")

// Check runs CHECK through the chain in order, each plugin given cached, the ADD's result
// (libcni CheckNetworkList): refused below CNI 0.4.0 and without a cached result, nothing with
// "disableCheck".
func (d *Delegate) Check(ctx context.Context, exec Exec, cached []byte) error {
	if !d.atLeast040() {
		return fmt.Errorf("configuration version %q %w", d.CNIVersion, ErrCheckNotSupported)
	}
	if d.DisableCheck {
		return nil
	}
	if cached == nil {
		return fmt.Errorf("failed to get network %q cached result: no ADD result is cached for this sandbox and interface", d.Name)
	}
	for i, p := range d.Plugins {
		stdin, err := d.Stdin(i, cached)
		if err != nil {
			return err
		}
		if _, err := exec(ctx, p.Type, "CHECK", stdin); err != nil {
			return err
		}
	}
	return nil
}

// Attach is Multus' ADD of one delegate: Add, and when it fails a DEL of the whole delegate
// (without a cached result) so that what the first plugins made is undone; the ADD's error is
// returned, the DEL's added to it.
func (d *Delegate) Attach(ctx context.Context, exec Exec) ([]byte, error) {
	res, err := d.Add(ctx, exec)
	if err == nil {
		return res, nil
	}
	if derr := d.Del(ctx, exec, nil); derr != nil {
		err = fmt.Errorf("%w; and while cleaning up: %w", err, derr)
	}
	return nil, err
}

// atLeast040: the delegate's CNI version is 0.4.0 or later (an empty or unreadable one is not).
func (d *Delegate) atLeast040() bool {
	parts := strings.SplitN(d.CNIVersion, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 0 || minor >= 4
}
