package settings

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestRenderNADGolden(t *testing.T) {
	tests := []struct{ name, raw string }{
		{"issue-example", validValue},
		{"untagged-ipv6-no-mtu", `{"clusterNetwork":"mig","range":"FD00:100::/64","exclude":["fd00:100::ffff","fd00:100::/120"]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nad := RenderNAD(mustParse(t, tc.raw), "kubevirt")
			got, err := yaml.Marshal(nad)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "render", tc.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestRenderNADGolden -update to create it)", err)
			}
			if d := gocmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("NAD differs from %s (-want +got):\n%s", path, d)
			}
		})
	}
}

func TestRenderNAD(t *testing.T) {
	m := mustParse(t, validValue)
	nad := RenderNAD(m, "kubevirt")
	hash := m.Hash()
	if nad.Name != "vm-migration-network-"+hash[:10] || nad.Name != NADName(hash) || nad.Namespace != "kubevirt" {
		t.Errorf("name %s/%s", nad.Namespace, nad.Name)
	}
	if got := nad.Labels[LabelHash]; got != hash[:63] || len(got) != 63 {
		t.Errorf("hash label %q", got)
	}
	if nad.Labels[LabelManagedBy] != "migranet" || nad.Annotations[AnnotationHash] != hash ||
		nad.Annotations[AnnotationSystemNetwork] != "true" || nad.Annotations[AnnotationHarvesterMigrationNetwork] != "true" {
		t.Errorf("metadata %v %v", nad.Labels, nad.Annotations)
	}
	wantConfig := `{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"mtu":9000,` +
		`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`
	if nad.Spec.Config != wantConfig {
		t.Errorf("config\n got %s\nwant %s", nad.Spec.Config, wantConfig)
	}
	// vlan 0, mtu 0 and no excludes are omitted.
	cfg := RenderNAD(mustParse(t, `{"clusterNetwork":"m","vlan":0,"range":"10.0.0.0/24","exclude":[]}`), "ns").Spec.Config
	if want := `{"cniVersion":"0.3.1","type":"bridge","bridge":"m-br","promiscMode":true,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`; cfg != want {
		t.Errorf("config\n got %s\nwant %s", cfg, want)
	}
	// Same canonical value, same bytes; a different value, a different name.
	other := mustParse(t, "{ \"mtu\":9000, \"exclude\":[\"192.168.100.1\"], \"range\":\"192.168.100.0/24\", \"vlan\":100, \"clusterNetwork\":\"migration\" }")
	if d := gocmp.Diff(nad, RenderNAD(other, "kubevirt")); d != "" {
		t.Errorf("equivalent values render differently:\n%s", d)
	}
	if RenderNAD(mustParse(t, strings.Replace(validValue, "100,", "101,", 1)), "kubevirt").Name == nad.Name {
		t.Error("a different value must get a different NAD name")
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(nad.Spec.Config), &decoded); err != nil {
		t.Errorf("config is not JSON: %v", err)
	}
	if RenderNAD(nil, "kubevirt") != nil {
		t.Error("disabled must render nil")
	}
	if NADName("abc") != "vm-migration-network-abc" || HashLabelValue("abc") != "abc" {
		t.Error("short hashes are kept whole")
	}
}
