package settings

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

func TestEffectiveNetwork(t *testing.T) {
	valid := `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
	m, _, _ := ParseNetwork(valid, field.NewPath("value"))
	tests := []struct {
		name      string
		s         *v1beta1.Setting
		nad       string
		errs      int
		disabled  bool
		fromValue bool
	}{
		{name: "nil setting", s: nil, disabled: true},
		{name: "empty", s: &v1beta1.Setting{}, disabled: true},
		{name: "value", s: &v1beta1.Setting{Value: valid}, nad: NADName(m.Hash())},
		{name: "default when value is blank", s: &v1beta1.Setting{Value: "  ", Default: valid}, nad: NADName(m.Hash())},
		{name: "invalid", s: &v1beta1.Setting{Value: `{"vlan":`}, errs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := EffectiveNetwork(tt.s)
			if e.NAD != tt.nad || len(e.Errs) != tt.errs || e.Disabled() != tt.disabled {
				t.Fatalf("got NAD %q, %d errors, disabled %v; want %q, %d, %v", e.NAD, len(e.Errs), e.Disabled(), tt.nad, tt.errs, tt.disabled)
			}
			if e.NAD != "" && (e.Hash != m.Hash() || e.Network == nil) {
				t.Errorf("hash %q network %v", e.Hash, e.Network)
			}
		})
	}
}

// TestValidateEffectiveAgreesWithAdmission: Effective.Validate, the settings controller's judgement of the value in
// force is the webhook's (ValidateSetting) restricted to the field that value comes from, on the
// same Cluster; the empty value is valid whatever the nodes.
// Catches: a second list of rules drifting from admission's; the errors of a default in force
// reported under value; the cluster ignored.
func TestValidateEffectiveAgreesWithAdmission(t *testing.T) {
	const bad = `{"clusterNetwork":"migration","vlan":4095,"range":"192.168.100.0/30","mtu":100}`
	const good = `{"clusterNetwork":"migration","range":"192.168.100.0/24"}`
	lacking := append(attached("n", "migration", 2), node("bare"))
	selector := &kubevirtv1.KubeVirt{Spec: kubevirtv1.KubeVirtSpec{Workloads: &kubevirtv1.ComponentConfig{
		NodePlacement: &kubevirtv1.NodePlacement{NodeSelector: map[string]string{ClusterNetworkLabelPrefix + "migration": "true"}}}}}
	tests := []struct {
		name string
		s    *v1beta1.Setting
		cl   *Cluster
		path string // "" when valid
	}{
		{name: "empty", s: &v1beta1.Setting{}, cl: ClusterOf(lacking, nil, nil, nil)},
		{name: "bad value", s: &v1beta1.Setting{Value: bad}, cl: ClusterOf(attached("n", "migration", 3), nil, nil, nil), path: "value"},
		{name: "bad default in force", s: &v1beta1.Setting{Value: " ", Default: bad}, cl: nil, path: "default"},
		{name: "a node lacks the cluster network", s: &v1beta1.Setting{Value: good}, cl: ClusterOf(lacking, nil, nil, nil), path: "value"},
		{name: "the node lacking it is outside KubeVirt's placement", s: &v1beta1.Setting{Value: good}, cl: ClusterOf(lacking, selector, nil, nil)},
		{name: "without a cluster only the value is judged", s: &v1beta1.Setting{Value: good}, cl: nil},
		{name: "unparsable", s: &v1beta1.Setting{Value: `{"range":`}, cl: nil, path: "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Name = v1beta1.MigrationNetwork
			got := EffectiveNetwork(tt.s).Validate(tt.cl)
			if (len(got) > 0) != (tt.path != "") {
				t.Fatalf("errors:\n%s want some under %q", dumpErrs(got), tt.path)
			}
			admission, _ := ValidateSetting(tt.s, tt.cl)
			var want field.ErrorList
			for _, e := range admission {
				if topField(e.Field) == tt.path {
					want = append(want, e)
				}
			}
			if dumpErrs(got) != dumpErrs(want) {
				t.Errorf("controller:\n%sadmission, under %q:\n%s", dumpErrs(got), tt.path, dumpErrs(want))
			}
		})
	}
}
