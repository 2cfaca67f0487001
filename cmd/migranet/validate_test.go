package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

func td(name string) string { return filepath.Join("testdata", "validate", name) }

func runV(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runValidate(defaultName, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings; nil means stdout must be empty
		stderr     []string // substrings
		noStderr   []string
		exactLines int // number of stdout lines when > 0
	}{
		{name: "valid without nodes", args: []string{td("valid.yaml")}, code: 0,
			stderr: []string{"warning: no --nodes given: skipping", "document 3: skipping ConfigMap"}},
		{name: "valid with nodes", args: []string{"--nodes", td("nodes.yaml"), td("valid.yaml")}, code: 0,
			noStderr: []string{"no --nodes"}},
		{name: "flags after files", args: []string{td("valid.yaml"), "-nodes", td("nodes.yaml"), "-o", "text"}, code: 0,
			noStderr: []string{"no --nodes"}},
		{name: "v1 List in JSON", args: []string{td("list.json")}, code: 0},
		{name: "typed SettingList", args: []string{td("settinglist.yaml")}, code: 0},
		{name: "several files", args: []string{td("valid.yaml"), td("list.json"), td("settinglist.yaml")}, code: 0},
		{name: "headroom warning is not an error", args: []string{"--nodes", td("nodes.yaml"), td("tight.yaml")}, code: 0,
			stdout: []string{"setting/vm-migration-network: warning: value.range: only 2 usable addresses for 2 eligible nodes"}, exactLines: 1},
		{name: "cluster network missing on a node", args: []string{"--nodes", td("nodes-missing.json"), td("valid.yaml")}, code: 1,
			stdout:     []string{`setting/vm-migration-network: value.clusterNetwork: Invalid value: "migration": cluster network "migration" is missing on 1 of 3 eligible nodes`, ": gpu-1;"},
			exactLines: 1},
		{name: "macvlan without a cluster network: an unlabelled node is eligible, not missing",
			args: []string{"--nodes", td("nodes-missing.json"), td("macvlan.yaml")}, code: 0},
		{name: "macvlan with vlan and passthru", args: []string{td("macvlan-invalid.yaml")}, code: 1,
			stdout:     []string{`value.vlan: Forbidden: a macvlan network is not tagged`, `"ens5.100"`, `value.macvlan.mode: Invalid value: "passthru"`},
			exactLines: 2},
		{name: "nodePlacement excludes that node", args: []string{"--nodes", td("nodes-missing.json"), "--kubevirt", td("kubevirt.yaml"), td("valid.yaml")}, code: 0},
		{name: "too few addresses", args: []string{"--nodes", td("nodes-missing.json"), td("tight.yaml")}, code: 1,
			stdout: []string{"value.range", "has 2 usable addresses", "3 eligible nodes"}},
		{name: "range over a Service range", args: []string{"--nodes", td("nodes.yaml"), "--service-cidrs", td("servicecidrs.yaml"), td("valid.yaml")}, code: 1,
			stdout:     []string{`setting/vm-migration-network: value.range: Invalid value: "192.168.100.0/24": overlaps the cluster's own networks: 192.168.0.0/16, the cluster's Service range`},
			exactLines: 1},
		{name: "service CIDRs without nodes are unused", args: []string{"--service-cidrs", td("servicecidrs.yaml"), td("valid.yaml")}, code: 0,
			stderr: []string{"--service-cidrs is only used together with --nodes"}},
		{name: "service CIDRs file without ServiceCIDRs", args: []string{"--nodes", td("nodes.yaml"), "--service-cidrs", td("nodes.yaml"), td("valid.yaml")}, code: 2,
			stderr: []string{"no ServiceCIDR objects found"}},
		{name: "kubevirt without nodes is unused", args: []string{"--kubevirt", td("kubevirt.yaml"), td("valid.yaml")}, code: 0,
			stderr: []string{"--kubevirt is only used together with --nodes"}},
		{name: "invalid settings", args: []string{td("invalid.yaml")}, code: 1,
			stdout: []string{"setting/vm-migration-network: value.vlan: Invalid value: 4095", "setting/storage-network: metadata.name: Unsupported value"}},
		{name: "setting with a YAML object as value and a spec", args: []string{td("value-object.yaml")}, code: 1,
			stdout: []string{"setting/vm-migration-network: value: Invalid value: \"object\": must be a JSON string, not object; a Setting's value is a string holding JSON, so quote it",
				`setting/migration-policy: spec: Unsupported value: "spec": unknown field of a Setting`}, exactLines: 2},
		{name: "Harvester's setting: VLAN 1 on mgmt refused, its other settings skipped", args: []string{td("harvester.yaml")}, code: 1,
			stdout:     []string{"settings.harvesterhci.io/vm-migration-network: value.vlan: Invalid value: 1", "mgmt"},
			stderr:     []string{`skipping Harvester setting "backup-target"`},
			exactLines: 1},
		{name: "Harvester's setting naming an mtu: a warning, Harvester takes the uplink's", args: []string{td("harvester-mtu.yaml")}, code: 0,
			stdout:     []string{"settings.harvesterhci.io/vm-migration-network: warning: value.mtu: Harvester does not read mtu"},
			exactLines: 1},
		{name: "Harvester's setting over a node's own address, with --nodes", args: []string{"--nodes", td("nodes-addresses.yaml"), td("harvester-nodes.yaml")}, code: 1,
			stdout: []string{"settings.harvesterhci.io/vm-migration-network: value.range", "worker-1", "10.20.0.11"}},
		// exit 2
		{name: "no file", args: nil, code: 2, stderr: []string{"no FILE given", "Usage: migranet validate"}},
		{name: "missing file", args: []string{td("nope.yaml")}, code: 2, stderr: []string{"nope.yaml", "no such file"}},
		{name: "unreadable YAML", args: []string{td("valid.yaml"), td("broken.yaml")}, code: 2, stderr: []string{"broken.yaml: document 1"}},
		{name: "no settings at all", args: []string{td("configmap.yaml")}, code: 2, stderr: []string{"no migranet.io Setting objects (nor Harvester's vm-migration-network) found"}},
		{name: "VlanConfig with an unreadable matched-nodes annotation", args: []string{td("uplink-broken.yaml")}, code: 2,
			stderr: []string{`document 2: VlanConfig "vc-a": annotation network.harvesterhci.io/matched-nodes is not a JSON list of node names`}},
		{name: "nodes file without nodes", args: []string{"--nodes", td("valid.yaml"), td("valid.yaml")}, code: 2,
			stderr: []string{"no Node objects found"}},
		{name: "kubevirt file without KubeVirt", args: []string{"--nodes", td("nodes.yaml"), "--kubevirt", td("nodes.yaml"), td("valid.yaml")}, code: 2,
			stderr: []string{"no kubevirt.io KubeVirt object found"}},
		{name: "missing nodes file", args: []string{"--nodes", td("nope.yaml"), td("valid.yaml")}, code: 2},
		{name: "bad output format", args: []string{"-o", "yaml", td("valid.yaml")}, code: 2, stderr: []string{"-o must be text or json"}},
		{name: "unknown flag", args: []string{"--frobnicate", td("valid.yaml")}, code: 2, stderr: []string{"flag provided but not defined"}},
		{name: "flag without value", args: []string{td("valid.yaml"), "--nodes"}, code: 2, stderr: []string{"flag needs an argument"}},
		{name: "double dash ends flags", args: []string{"--", "-o"}, code: 2, stderr: []string{"-o: no such file"}},
		{name: "help", args: []string{"-h"}, code: 0, stdout: []string{"Usage: migranet validate", "-kubevirt"}, noStderr: []string{"Usage"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runV(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if tc.stdout == nil && stdout != "" {
				t.Errorf("unexpected stdout:\n%s", stdout)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range tc.noStderr {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr has %q:\n%s", s, stderr)
				}
			}
			if n := strings.Count(stdout, "\n"); tc.exactLines > 0 && n != tc.exactLines {
				t.Errorf("%d stdout lines, want %d:\n%s", n, tc.exactLines, stdout)
			}
		})
	}
}

// TestValidateOutputGolden pins both output formats for a file with many problems.
func TestValidateOutputGolden(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			code, stdout, _ := runV("-o", format, "--nodes", td("nodes-missing.json"), td("invalid.yaml"), td("tight.yaml"))
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			path := td("invalid." + format + ".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestValidateOutputGolden -update creates it)", err)
			}
			if d := gocmp.Diff(string(want), stdout); d != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", path, d)
			}
		})
	}
}

func TestValidateJSONShape(t *testing.T) {
	code, stdout, _ := runV("-o", "json", "--nodes", td("nodes.yaml"), td("invalid.yaml"), td("tight.yaml"))
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var got []problem
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not a JSON array of problems: %v\n%s", err, stdout)
	}
	kinds := map[string]int{}
	for _, p := range got {
		if p.Setting == "" || p.Type == "" || p.Message == "" || p.File == "" {
			t.Errorf("incomplete entry %+v", p)
		}
		kinds[p.Type]++
	}
	if kinds[warningType] != 1 || kinds["FieldValueInvalid"] == 0 || kinds["FieldValueNotSupported"] != 1 || kinds["FieldValueDuplicate"] != 0 {
		t.Errorf("entry types %v", kinds)
	}
	var warn problem
	for _, p := range got {
		if p.Type == warningType {
			warn = p
		}
	}
	if warn.Field != "value.range" || !strings.HasPrefix(warn.Message, "only 2 usable addresses") {
		t.Errorf("warning entry %+v", warn)
	}

	// All valid: an empty array, exit 0.
	code, stdout, _ = runV("-o", "json", td("valid.yaml"))
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("valid input: exit %d, output %q", code, stdout)
	}
}

// TestValidateUplinkMTU: VlanConfigs and ClusterNetworks of Harvester's network controller among
// the input are read as the uplinks of the value's cluster network, and the value is judged
// against them. Each case names the fault it catches.
func TestValidateUplinkMTU(t *testing.T) {
	tests := []struct {
		name, fault string
		file        string
		code        int
		stdout      []string // substrings of the one line of stdout; nil: stdout empty
		stderr      []string
	}{
		{name: "Harvester's setting over VlanConfigs of different MTUs", file: "uplink-mismatch.yaml", code: 1,
			fault: "VlanConfigs of one cluster network setting different MTUs are not compared (or 0 is not read as 1500)",
			stdout: []string{`settings.harvesterhci.io/vm-migration-network: value.clusterNetwork: Invalid value: "migration": ` +
				`the VlanConfigs of cluster network "migration" set different uplink MTUs: ` +
				`vc-jumbo (MTU 9000; nodes worker-1, worker-2), vc-small (MTU 1500; node worker-3); ` +
				`Harvester's NAD takes MTU 9000 (the first VlanConfig, vc-jumbo), more than the uplink of vc-small carries`,
				`set the same spec.uplink.linkAttributes.mtu on every VlanConfig of cluster network "migration"`},
			stderr: []string{`document 2: VlanConfig "vc-jumbo" read for the uplink MTU of cluster network "migration", not judged itself`}},
		{name: "Harvester's setting, ClusterNetwork annotation above its VlanConfigs", file: "uplink-annotation.yaml", code: 1,
			fault: "the ClusterNetwork's uplink-mtu annotation is not taken as the NAD's MTU (the first VlanConfig's is, and all agree)",
			stdout: []string{`settings.harvesterhci.io/vm-migration-network: value.clusterNetwork: Invalid value: "migration": ` +
				`Harvester's NAD takes MTU 9000 (the ClusterNetwork's annotation network.harvesterhci.io/uplink-mtu), ` +
				`more than the uplink MTU 1500 every VlanConfig of cluster network "migration" sets: vc-a (MTU 1500; node worker-1), vc-b (MTU 1500; node worker-2)`,
				`set the ClusterNetwork's annotation to 1500, or set spec.uplink.linkAttributes.mtu 9000 on every VlanConfig`},
			stderr: []string{`document 1 item 2: ClusterNetwork "migration" read for its uplink MTU (9000), not judged itself`}},
		{name: "migranet's mtu 9000 over a 1500 uplink", file: "uplink-mtu-over.yaml", code: 1,
			fault: "migranet's own value's mtu is not judged against the uplinks of its cluster network",
			stdout: []string{`setting/vm-migration-network: value.mtu: Invalid value: 9000: is more than cluster network "migration" carries ` +
				`on the uplink of VlanConfig vc-1500 (MTU 1500; nodes worker-1, worker-2)`,
				`lower mtu to 1500, or raise spec.uplink.linkAttributes.mtu of VlanConfig vc-1500 to 9000`}},
		{name: "all uplinks equal", file: "uplink-equal.yaml", code: 0,
			fault:  "a VlanConfig's mtu 0 is not read as 1500, or the VlanConfigs of another cluster network are counted",
			stderr: []string{`VlanConfig "vc-storage" read for the uplink MTU of cluster network "storage"`}},
		{name: "no VlanConfigs, no judgement", file: "uplink-none.yaml", code: 0,
			fault: "a cluster network without VlanConfigs is judged against a guessed uplink (the default 1500, or the ClusterNetwork's annotation)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runV(td(tc.file))
			if code != tc.code {
				t.Fatalf("fault: %s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.fault, code, tc.code, stdout, stderr)
			}
			if tc.stdout == nil && stdout != "" {
				t.Errorf("fault: %s\nunexpected stdout:\n%s", tc.fault, stdout)
			}
			if n := strings.Count(stdout, "\n"); tc.stdout != nil && n != 1 {
				t.Errorf("fault: %s\n%d stdout lines, want 1:\n%s", tc.fault, n, stdout)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("fault: %s\nstdout lacks %q:\n%s", tc.fault, s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("fault: %s\nstderr lacks %q:\n%s", tc.fault, s, stderr)
				}
			}
		})
	}
}
