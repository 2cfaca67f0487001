package settings

import (
	"encoding/json"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expectedNAD is a NAD as migranet must render it, written by hand: hash is the SHA-256 of the
// canonical value, computed outside migranet (printf '%s' '<canonical>' | sha256sum).
func expectedNAD(hash, config string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "k8s.cni.cncf.io/v1", Kind: "NetworkAttachmentDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "vm-migration-network-" + hash[:10],
			Namespace: "kubevirt",
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "migranet", "migranet.io/hash": hash[:63], "migranet.io/role": "migration"},
			Annotations: map[string]string{
				"migranet.io/hash":                              hash,
				"migranet.io/system-network":                    "true",
				"vm-migration-network.settings.harvesterhci.io": "true",
			},
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	}
}

// TestRenderNADExpected compares whole NADs with hand-written ones (the bridge CNI config with
// whereabouts IPAM as Multus and whereabouts read it), never with an earlier output of RenderNAD.
func TestRenderNADExpected(t *testing.T) {
	tests := []struct {
		name, raw string
		want      *nadv1.NetworkAttachmentDefinition
	}{
		{"issue example", validValue, expectedNAD(
			// printf '%s' '{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}' | sha256sum
			"d37a915f8284b3de95dc96b6c15f56d662a0e493c55db7dd64148f97962a9fa1",
			`{"cniVersion":"0.3.1","type":"bridge","bridge":"migration-br","promiscMode":true,"vlan":100,"mtu":9000,`+
				`"ipam":{"type":"whereabouts","range":"192.168.100.0/24","exclude":["192.168.100.1/32"]}}`)},
		{"untagged ipv6 without mtu", `{"clusterNetwork":"mig","range":"FD00:100::/64","exclude":["fd00:100::ffff","fd00:100::/120"]}`, expectedNAD(
			// printf '%s' '{"clusterNetwork":"mig","vlan":0,"range":"fd00:100::/64","exclude":["fd00:100::/120","fd00:100::ffff/128"]}' | sha256sum
			"ae530134f2765609b48f9b9974368e361637f344eebcc0391cae312cd54cc501",
			`{"cniVersion":"0.3.1","type":"bridge","bridge":"mig-br","promiscMode":true,`+
				`"ipam":{"type":"whereabouts","range":"fd00:100::/64","exclude":["fd00:100::/120","fd00:100::ffff/128"]}}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := gocmp.Diff(tc.want, RenderNAD(EffectiveOf(mustNetwork(t, tc.raw)), "kubevirt")); d != "" {
				t.Errorf("RenderNAD (-want +got):\n%s", d)
			}
		})
	}
}

func TestRenderNAD(t *testing.T) {
	m := mustNetwork(t, validValue)
	nad := RenderNAD(EffectiveOf(m), "kubevirt")
	// printf '%s' "$validValue" | sha256sum (validValue is already canonical)
	const hash = "d37a915f8284b3de95dc96b6c15f56d662a0e493c55db7dd64148f97962a9fa1"
	if nad.Name != "vm-migration-network-d37a915f82" || nad.Name != NADName(hash) || nad.Namespace != "kubevirt" {
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
	cfg := RenderNAD(EffectiveOf(mustNetwork(t, `{"clusterNetwork":"m","vlan":0,"range":"10.0.0.0/24","exclude":[]}`)), "ns").Spec.Config
	if want := `{"cniVersion":"0.3.1","type":"bridge","bridge":"m-br","promiscMode":true,"ipam":{"type":"whereabouts","range":"10.0.0.0/24"}}`; cfg != want {
		t.Errorf("config\n got %s\nwant %s", cfg, want)
	}
	// Same canonical value, same bytes; a different value, a different name.
	other := mustNetwork(t, "{ \"mtu\":9000, \"exclude\":[\"192.168.100.1\"], \"range\":\"192.168.100.0/24\", \"vlan\":100, \"clusterNetwork\":\"migration\" }")
	if d := gocmp.Diff(nad, RenderNAD(EffectiveOf(other), "kubevirt")); d != "" {
		t.Errorf("equivalent values render differently:\n%s", d)
	}
	if RenderNAD(EffectiveOf(mustNetwork(t, strings.Replace(validValue, "100,", "101,", 1))), "kubevirt").Name == nad.Name {
		t.Error("a different value must get a different NAD name")
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(nad.Spec.Config), &decoded); err != nil {
		t.Errorf("config is not JSON: %v", err)
	}
	if RenderNAD(EffectiveOf(nil), "kubevirt") != nil {
		t.Error("disabled must render nil")
	}
	if NADName("abc") != "vm-migration-network-abc" || HashLabelValue("abc") != "abc" {
		t.Error("short hashes are kept whole")
	}
}

func TestMTUOfConfig(t *testing.T) {
	m := mustNetwork(t, `{"clusterNetwork":"migration","range":"10.0.0.0/24","mtu":9000}`)
	for config, want := range map[string]int{NADConfig(m): 9000, `{"type":"bridge"}`: 0, `not json`: 0, `{"mtu":-5}`: 0} {
		if got := MTUOfConfig(config); got != want {
			t.Errorf("MTUOfConfig(%s) = %d, want %d", config, got, want)
		}
	}
}
