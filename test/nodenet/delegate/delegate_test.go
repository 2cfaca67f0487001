package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// call is one plugin run the recorder saw: the binary, the command, and from its stdin the
// network name, CNI version and prevResult ("" when absent).
type call struct {
	Type, Command, Name, Version, Prev string
}

// recorder is an Exec that records every call and answers an ADD with a result naming the
// plugin ({"step":"<type>"}); fail makes a type's command fail.
type recorder struct {
	calls []call
	fail  map[string]string // "type command" → its error
}

func (r *recorder) exec(_ context.Context, typ, command string, stdin []byte) ([]byte, error) {
	var conf struct {
		Name       string          `json:"name"`
		CNIVersion string          `json:"cniVersion"`
		Prev       json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, err
	}
	r.calls = append(r.calls, call{typ, command, conf.Name, conf.CNIVersion, string(conf.Prev)})
	if msg, ok := r.fail[typ+" "+command]; ok {
		return nil, errors.New(msg)
	}
	if command != "ADD" {
		return nil, nil
	}
	return []byte(fmt.Sprintf(`{"step":%q}`, typ)), nil
}

const (
	bridge       = `{"type":"bridge","bridge":"migration-br","ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`
	chain3       = `{"cniVersion":"1.0.0","name":"mig","plugins":[` + bridge + `,{"type":"tuning","mtu":1300},{"type":"bandwidth","ingressRate":8000000,"ingressBurst":80000}]}`
	chain2old    = `{"cniVersion":"0.3.1","name":"mig","plugins":[` + bridge + `,{"type":"tuning"}]}`
	nadName      = "vm-migration-network-x"
	stepBridge   = `{"step":"bridge"}`
	stepTuning   = `{"step":"tuning"}`
	stepBandwdth = `{"step":"bandwidth"}`
)

// TestChain: the chain as libcni runs it and Multus cleans up after it, one row per behaviour and
// its near misses. Catches: prevResult not handed on (the tuning and bandwidth rows), DEL in list
// order instead of reversed, a failed ADD left half done, the NAD's name not given to a config
// without one, CHECK run where libcni refuses it.
func TestChain(t *testing.T) {
	cases := []struct {
		name    string
		config  string
		fail    map[string]string
		run     func(ctx context.Context, d *Delegate, exec Exec) ([]byte, error)
		want    []call
		result  string // the ADD's result, when it returns one
		wantErr string // "" succeeds; else part of the error
	}{
		{name: "single plugin: the NAD's name, no prevResult", config: `{"cniVersion":"0.3.1",` + bridge[1:],
			run:  add,
			want: []call{{"bridge", "ADD", nadName, "0.3.1", ""}}, result: stepBridge},
		{name: "a list of one plugin is a list: its name and version given to the plugin", config: `{"cniVersion":"1.0.0","plugins":[` + bridge + `]}`,
			run:  add,
			want: []call{{"bridge", "ADD", nadName, "1.0.0", ""}}, result: stepBridge},
		{name: "each plugin gets the previous one's result; the last result is the chain's", config: chain3,
			run: add,
			want: []call{{"bridge", "ADD", "mig", "1.0.0", ""}, {"tuning", "ADD", "mig", "1.0.0", stepBridge},
				{"bandwidth", "ADD", "mig", "1.0.0", stepTuning}}, result: stepBandwdth},
		{name: "the 2nd plugin fails: the ADD fails naming it, nothing undone (libcni)", config: chain3,
			fail: map[string]string{"tuning ADD": "failed to set MTU"}, run: add,
			want:    []call{{"bridge", "ADD", "mig", "1.0.0", ""}, {"tuning", "ADD", "mig", "1.0.0", stepBridge}},
			wantErr: `plugin type="tuning" failed (add): failed to set MTU`},
		{name: "the 2nd plugin fails: Multus DELs the whole delegate, in reverse, without a result", config: chain3,
			fail: map[string]string{"tuning ADD": "failed to set MTU"}, run: attach,
			want: []call{{"bridge", "ADD", "mig", "1.0.0", ""}, {"tuning", "ADD", "mig", "1.0.0", stepBridge},
				{"bandwidth", "DEL", "mig", "1.0.0", ""}, {"tuning", "DEL", "mig", "1.0.0", ""}, {"bridge", "DEL", "mig", "1.0.0", ""}},
			wantErr: `plugin type="tuning" failed (add): failed to set MTU`},
		{name: "the cleanup DEL's failure is added to the ADD's", config: chain3,
			fail: map[string]string{"bridge ADD": "no bridge", "bridge DEL": "busy"}, run: attach,
			want: []call{{"bridge", "ADD", "mig", "1.0.0", ""}, {"bandwidth", "DEL", "mig", "1.0.0", ""},
				{"tuning", "DEL", "mig", "1.0.0", ""}, {"bridge", "DEL", "mig", "1.0.0", ""}},
			wantErr: `plugin type="bridge" failed (add): no bridge; and while cleaning up: plugin type="bridge" failed (delete): busy`},
		{name: "DEL in reverse order, each given the cached result (CNI 1.0.0)", config: chain3,
			run: del(stepBandwdth),
			want: []call{{"bandwidth", "DEL", "mig", "1.0.0", stepBandwdth}, {"tuning", "DEL", "mig", "1.0.0", stepBandwdth},
				{"bridge", "DEL", "mig", "1.0.0", stepBandwdth}}},
		{name: "DEL below CNI 0.4.0: no prevResult", config: chain2old, run: del(stepTuning),
			want: []call{{"tuning", "DEL", "mig", "0.3.1", ""}, {"bridge", "DEL", "mig", "0.3.1", ""}}},
		{name: "a failing DEL ends the DEL, naming the plugin", config: chain3, run: del(stepBandwdth),
			fail:    map[string]string{"tuning DEL": "no such device"},
			want:    []call{{"bandwidth", "DEL", "mig", "1.0.0", stepBandwdth}, {"tuning", "DEL", "mig", "1.0.0", stepBandwdth}},
			wantErr: `plugin type="tuning" failed (delete): no such device`},
		{name: "CHECK in order with the cached result", config: chain3, run: check(stepBandwdth),
			want: []call{{"bridge", "CHECK", "mig", "1.0.0", stepBandwdth}, {"tuning", "CHECK", "mig", "1.0.0", stepBandwdth},
				{"bandwidth", "CHECK", "mig", "1.0.0", stepBandwdth}}},
		{name: "CHECK below CNI 0.4.0 is refused, nothing run", config: chain2old, run: check(stepTuning),
			wantErr: `configuration version "0.3.1" does not support the CHECK command`},
		{name: "CHECK without a cached result is refused", config: chain3, run: check(""),
			wantErr: `failed to get network "mig" cached result`},
		{name: "CHECK with disableCheck runs nothing", config: strings.Replace(chain3, `"name":"mig",`, `"name":"mig","disableCheck":true,`, 1),
			run: check(stepBandwdth)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Load(c.config, nadName)
			if err != nil {
				t.Fatal(err)
			}
			r := &recorder{fail: c.fail}
			res, err := c.run(context.Background(), d, r.exec)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one with %q", err, c.wantErr)
			}
			if diff := cmp.Diff(c.want, r.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if string(res) != c.result {
				t.Errorf("result %s, want %s", res, c.result)
			}
		})
	}
}

func add(ctx context.Context, d *Delegate, exec Exec) ([]byte, error)    { return d.Add(ctx, exec) }
func attach(ctx context.Context, d *Delegate, exec Exec) ([]byte, error) { return d.Attach(ctx, exec) }

func del(cached string) func(context.Context, *Delegate, Exec) ([]byte, error) {
	return func(ctx context.Context, d *Delegate, exec Exec) ([]byte, error) {
		return nil, d.Del(ctx, exec, []byte(cached))
	}
}

func check(cached string) func(context.Context, *Delegate, Exec) ([]byte, error) {
	return func(ctx context.Context, d *Delegate, exec Exec) ([]byte, error) {
		var c []byte
		if cached != "" {
			c = []byte(cached)
		}
		return nil, d.Check(ctx, exec, c)
	}
}

// TestLoad: what Multus makes of a NAD's config, and the errors for what it refuses, each naming
// the field and the fix.
func TestLoad(t *testing.T) {
	cases := []struct {
		name, config string
		want         string // the delegate as "name version list types", or the error's part
		err          bool
	}{
		{name: "no name: the NAD's", config: bridge, want: nadName + "  false bridge"},
		{name: "an empty name: the NAD's", config: `{"name":"","type":"macvlan","master":"ens5"}`, want: nadName + "  false macvlan"},
		{name: "its own name kept", config: `{"name":"mine","cniVersion":"0.3.1","type":"bridge"}`, want: "mine 0.3.1 false bridge"},
		{name: "a list without name: the NAD's", config: `{"cniVersion":"1.0.0","plugins":[{"type":"ipvlan","master":"ens5"},{"type":"tuning"}]}`,
			want: nadName + " 1.0.0 true ipvlan,tuning"},
		{name: "type beside plugins: one plugin, as Multus decides", config: `{"type":"bridge","plugins":[{"type":"tuning"}]}`,
			want: nadName + "  false bridge"},
		{name: "not JSON", config: `{"type":`, err: true, want: "spec.config: not a JSON object"},
		{name: "neither type nor plugins", config: `{"cniVersion":"1.0.0","bridge":"br0"}`, err: true,
			want: `spec.config: neither "type" nor "plugins": name the CNI plugin in "type", or list the chain in "plugins"`},
		{name: "plugins not a list", config: `{"plugins":{"type":"bridge"}}`, err: true, want: "spec.config.plugins: map[string]interface {}, not a list"},
		{name: "plugins empty", config: `{"plugins":[]}`, err: true, want: "spec.config.plugins: empty: list at least one plugin config"},
		{name: "the 2nd plugin without type", config: `{"plugins":[{"type":"bridge"},{"mtu":1300}]}`, err: true,
			want: `spec.config.plugins[1].type: missing: name the plugin binary of this step`},
		{name: "a plugin that is not an object", config: `{"plugins":[{"type":"bridge"},"tuning"]}`, err: true,
			want: "spec.config.plugins[1]: string, not an object"},
		{name: "a type that is a path", config: `{"plugins":[{"type":"../../bin/sh"}]}`, err: true,
			want: `spec.config.plugins[0].type: "../../bin/sh" is a path`},
		{name: "a name that is no string", config: `{"name":7,"type":"bridge"}`, err: true, want: "spec.config.name: float64, not a string"},
		{name: "disableCheck not a boolean", config: `{"disableCheck":"maybe","plugins":[{"type":"bridge"}]}`, err: true,
			want: "spec.config.disableCheck: maybe is not a boolean: write true or false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Load(c.config, nadName)
			if c.err {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, p := range d.Plugins {
				types = append(types, p.Type)
			}
			if got := fmt.Sprintf("%s %s %v %s", d.Name, d.CNIVersion, d.List, strings.Join(types, ",")); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestStdinKeepsThePluginsOwnFields: a plugin's stdin is its own config, with the list's name and
// version and the prevResult added; the NAD's config itself is left as it was.
func TestStdinKeepsThePluginsOwnFields(t *testing.T) {
	d, err := Load(chain3, nadName)
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := d.Stdin(1, []byte(stepBridge))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(stdin, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "tuning", "mtu": float64(1300), "name": "mig", "cniVersion": "1.0.0", "prevResult": map[string]any{"step": "bridge"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdin (-want +got):\n%s", diff)
	}
	if _, ok := d.Plugins[1].Conf["prevResult"]; ok {
		t.Errorf("the plugin's own config was changed: %v", d.Plugins[1].Conf)
	}
}
