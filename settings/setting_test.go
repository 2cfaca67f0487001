package settings

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

func setting(name, value, def string) *v1beta1.Setting {
	return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Default: def}
}

func TestValidateSetting(t *testing.T) {
	cl := &Cluster{Nodes: attached("n", "migration", 3)}
	tests := []struct {
		name  string
		s     *v1beta1.Setting
		errs  []wantErr
		warns int
	}{
		{name: "nil", s: nil, errs: []wantErr{req("metadata.name")}},
		{name: "disabled", s: setting(v1beta1.MigrationNetwork, "", "")},
		{name: "valid value", s: setting(v1beta1.MigrationNetwork, validValue, "")},
		{name: "valid default", s: setting(v1beta1.MigrationNetwork, "", validValue)},
		{name: "bad value", s: setting(v1beta1.MigrationNetwork, mn("migration", 4095, "10.0.0.0/24", nil, ""), ""),
			errs: []wantErr{inv("value.vlan")}},
		{name: "bad default", s: setting(v1beta1.MigrationNetwork, validValue, mn("migration", 1, "10.0.0.1/24", nil, `,"foo":1`)),
			errs: []wantErr{inv("default.range", `did you mean "10.0.0.0/24"`), nsup("default.foo")}},
		{name: "default checked against the cluster", s: setting(v1beta1.MigrationNetwork, "", mn("other", 1, "10.0.0.0/24", nil, "")),
			errs: []wantErr{inv("default.clusterNetwork", "missing on 3 of 3")}},
		{name: "default warns", s: setting(v1beta1.MigrationNetwork, "", mn("migration", 1, "10.0.0.0/29", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, "")),
			warns: 1},
		{name: "value not JSON", s: setting(v1beta1.MigrationNetwork, "clusterNetwork: migration", ""), errs: []wantErr{inv("value", "not valid JSON")}},
		{name: "policy empty", s: setting(v1beta1.MigrationPolicy, "", "")},
		{name: "policy valid", s: setting(v1beta1.MigrationPolicy, `{"rules":{"feasibleTarget":"warn"},"exemptUsers":["alice"]}`, DefaultMigrationPolicy())},
		{name: "policy unknown keys", s: setting(v1beta1.MigrationPolicy, `{"anything":{"goes":[1,2]}}`, `{"rules":{"kubeVirtReady":"off"}}`),
			errs: []wantErr{nsup("value.anything", "unknown key"), nsup("default.rules.kubeVirtReady", `did you mean "kubevirtReady"`)}},
		{name: "policy syntax", s: setting(v1beta1.MigrationPolicy, `{"a":`, `[1]`),
			errs: []wantErr{inv("value", "ends early"), inv("default", "JSON object")}},
		{name: "policy trailing and duplicate", s: setting(v1beta1.MigrationPolicy, `{"exemptUsers":["a"],"exemptUsers":["b"]} 3`, ""),
			errs: []wantErr{dup("value.exemptUsers"), inv("value", "unexpected data")}},
		{name: "unknown setting", s: setting("storage-network", validValue, ""),
			errs: []wantErr{nsup("metadata.name", "migranet owns only the settings \"vm-migration-network\" and \"migration-policy\"")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := ValidateSetting(tc.s, cl)
			checkErrs(t, errs, tc.errs)
			if len(warns) != tc.warns {
				t.Errorf("warnings %q, want %d", warns, tc.warns)
			}
			for _, w := range warns {
				if !strings.HasPrefix(w, "default.range: ") {
					t.Errorf("warning %q lacks its field path", w)
				}
			}
		})
	}
}

func TestEffectiveValue(t *testing.T) {
	for _, tc := range []struct{ value, def, want string }{
		{"a", "b", "a"}, {"", "b", "b"}, {"  \n", "b", "b"}, {"", "", ""},
	} {
		if got := EffectiveValue(setting(v1beta1.MigrationNetwork, tc.value, tc.def)); got != tc.want {
			t.Errorf("EffectiveValue(%q, %q) = %q, want %q", tc.value, tc.def, got, tc.want)
		}
	}
	if EffectiveValue(nil) != "" {
		t.Error("nil Setting")
	}
}
