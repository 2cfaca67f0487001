package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	goodNetwork = `'{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}'`
	badNetwork  = `'{"clusterNetwork":"migration","vlan":5000,"range":"192.168.100.0/24"}'`
	header      = "apiVersion: migranet.io/v1beta1\nkind: Setting\n"
)

// TestValidateStrictDecoding checks that `migranet validate` refuses what the API server refuses
// under strict field validation, naming each field's path. want lists the output lines' prefixes
// (before the message) and a substring of each, in order.
func TestValidateStrictDecoding(t *testing.T) {
	type line struct{ prefix, contains string }
	tests := []struct {
		name string
		file string // a .json name is written as JSON, else YAML
		body string
		code int
		want []line
	}{
		{name: "valid", body: header + "metadata:\n  name: vm-migration-network\nvalue: " + goodNetwork + "\n", code: 0},
		{name: "unknown top-level field", body: header + "metadata:\n  name: vm-migration-network\nvaleu: " + badNetwork + "\n", code: 1,
			want: []line{{"setting/vm-migration-network: valeu: Unsupported value: \"valeu\"", "unknown field of a Setting"}}},
		{name: "field names are case-sensitive", body: header + "metadata:\n  name: migration-policy\nValue: '{}'\n", code: 1,
			want: []line{{"setting/migration-policy: Value: Unsupported value", "case-sensitive"}}},
		{name: "unknown nested field", body: header + "metadata:\n  name: vm-migration-network\n  labelz: {a: b}\nvalue: " + goodNetwork + "\n", code: 1,
			want: []line{{"setting/vm-migration-network: metadata.labelz: Unsupported value: \"labelz\"", `unknown field "metadata.labelz"`}}},
		{name: "duplicate value in YAML: the first (bad) one is reported, the last validated",
			body: header + "metadata:\n  name: vm-migration-network\nvalue: " + badNetwork + "\nvalue: " + goodNetwork + "\n", code: 1,
			want: []line{{"setting/vm-migration-network: value: Duplicate value: \"value\"", `duplicate field "value" (lines 5 and 6)`}}},
		{name: "duplicate value in YAML: the last one is validated too",
			body: header + "metadata:\n  name: vm-migration-network\nvalue: " + goodNetwork + "\nvalue: " + badNetwork + "\n", code: 1,
			want: []line{{"setting/vm-migration-network: value: Duplicate value", "keep a single"},
				{"setting/vm-migration-network: value.vlan: Invalid value: 5000", "4094"}}},
		{name: "duplicate nested key in YAML", body: header + "metadata:\n  name: migration-policy\n  name: migration-policy\nvalue: '{}'\n", code: 1,
			want: []line{{"setting/migration-policy: metadata.name: Duplicate value", "lines 4 and 5"}}},
		{name: "duplicate value in JSON", file: "s.json",
			body: `{"apiVersion":"migranet.io/v1beta1","kind":"Setting","metadata":{"name":"migration-policy"},"value":"{\"feasibleTarget\":\"bogus\"}","value":"{}"}`,
			code: 1, want: []line{{"setting/migration-policy: value: Duplicate value", `duplicate field "value"`}}},
		{name: "unknown field in JSON", file: "s.json",
			body: `{"apiVersion":"migranet.io/v1beta1","kind":"Setting","metadata":{"name":"migration-policy","nam":"x"},"value":"{}"}`,
			code: 1, want: []line{{"setting/migration-policy: metadata.nam: Unsupported value", `unknown field "metadata.nam"`}}},
		{name: "apiVersion not served", body: "apiVersion: migranet.io/v9\nkind: Setting\nmetadata:\n  name: vm-migration-network\nvalue: " + goodNetwork + "\n", code: 1,
			want: []line{{`setting/vm-migration-network: apiVersion: Unsupported value: "migranet.io/v9"`, `no matches for kind "Setting" in version "migranet.io/v9"`}}},
		{name: "apiVersion without group", body: "apiVersion: v1beta1\nkind: Setting\nmetadata:\n  name: vm-migration-network\nvalue: " + goodNetwork + "\n", code: 1,
			want: []line{{`setting/vm-migration-network: apiVersion: Unsupported value: "v1beta1"`, "write apiVersion: migranet.io/v1beta1"}}},
		{name: "kind spelled wrong", body: "apiVersion: migranet.io/v1beta1\nkind: setting\nmetadata:\n  name: migration-policy\nvalue: '{}'\n", code: 1,
			want: []line{{`setting/migration-policy: kind: Unsupported value: "setting"`, "write kind: Setting"}}},
		{name: "Harvester's own vm-migration-network is judged with migranet's rules, under its own name",
			body: "apiVersion: harvesterhci.io/v1beta1\nkind: Setting\nmetadata:\n  name: vm-migration-network\nvalue: x\n", code: 1,
			want: []line{{`settings.harvesterhci.io/vm-migration-network: value: Invalid value: "x": is not valid JSON`, "must be a JSON object"}}},
		{name: "Harvester's other settings are not judged", body: "apiVersion: harvesterhci.io/v1beta1\nkind: Setting\nmetadata:\n  name: storage-network\nvalue: x\n", code: 2},
		{name: "multi-document, both settings",
			body: header + "metadata:\n  name: vm-migration-network\nvalue: " + badNetwork + "\n---\n" +
				header + "metadata:\n  name: migration-policy\nvalue: '{}'\ndefualt: '{}'\n", code: 1,
			want: []line{{"setting/vm-migration-network: value.vlan: Invalid value: 5000", "4094"},
				{"setting/migration-policy: defualt: Unsupported value", "unknown field of a Setting"}}},
		{name: "List in YAML: a duplicate inside the second item is that item's",
			body: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(header, "\n", "\n  ") + "metadata: {name: migration-policy}\n  value: '{}'\n" +
				"- " + strings.ReplaceAll(header, "\n", "\n  ") + "metadata: {name: vm-migration-network}\n  value: " + goodNetwork + "\n  value: " + goodNetwork + "\n",
			code: 1, want: []line{{"setting/vm-migration-network: value: Duplicate value", "lines 11 and 12"}}},
		{name: "typed SettingList in JSON with an unknown field in an item", file: "l.json",
			body: `{"apiVersion":"migranet.io/v1beta1","kind":"SettingList","items":[{"metadata":{"name":"migration-policy"},"value":"{}","spec":{}}]}`,
			code: 1, want: []line{{"setting/migration-policy: spec: Unsupported value", "unknown field of a Setting"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.file
			if name == "" {
				name = "s.yaml"
			}
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runV(path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			lines := slices.DeleteFunc(strings.Split(stdout, "\n"), func(s string) bool { return s == "" })
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), stdout)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w.prefix) || !strings.Contains(lines[i], w.contains) {
					t.Errorf("line %d = %q, want prefix %q containing %q", i+1, lines[i], w.prefix, w.contains)
				}
			}
		})
	}
}
