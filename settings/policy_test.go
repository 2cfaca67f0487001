package settings

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParseMigrationPolicy(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *MigrationPolicy
		wantNil bool
		errs    []wantErr
	}{
		{name: "empty is the default", raw: "", want: &MigrationPolicy{}},
		{name: "whitespace is the default", raw: " \n ", want: &MigrationPolicy{}},
		{name: "empty object", raw: `{}`, want: &MigrationPolicy{}},
		{name: "full value", raw: `{"rules":{"kubevirtReady":"warn","networkReady":"off","feasibleTarget":"enforce","vmiState":"warn","postCopyCancel":"off"},"exemptUsers":["system:serviceaccount:kube-system:descheduler","alice"]}`,
			want: &MigrationPolicy{
				Rules: map[Rule]Mode{RuleKubeVirtReady: ModeWarn, RuleNetworkReady: ModeOff, RuleFeasibleTarget: ModeEnforce,
					RuleVMIState: ModeWarn, RulePostCopyCancel: ModeOff},
				ExemptUsers: []string{"system:serviceaccount:kube-system:descheduler", "alice"},
			}},
		{name: "nulls read as omitted", raw: `{"rules":null,"exemptUsers":null}`, want: &MigrationPolicy{}},
		{name: "null mode reads as omitted", raw: `{"rules":{"vmiState":null,"feasibleTarget":"off"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{RuleFeasibleTarget: ModeOff}}},
		{name: "not JSON", raw: `rules: {}`, wantNil: true, errs: []wantErr{inv("value", "not valid JSON")}},
		{name: "not an object", raw: `["alice"]`, wantNil: true, errs: []wantErr{inv("value", "must be a JSON object")}},
		{name: "unknown top-level key", raw: `{"rule":{},"exemptUsers":["alice"]}`,
			want: &MigrationPolicy{ExemptUsers: []string{"alice"}},
			errs: []wantErr{nsup("value.rule", "unknown key", `"rules"`, `"exemptUsers"`)}},
		{name: "top-level key case", raw: `{"ExemptUsers":["alice"]}`, want: &MigrationPolicy{},
			errs: []wantErr{nsup("value.ExemptUsers", `did you mean "exemptUsers"`)}},
		{name: "unknown rule lists the valid ones", raw: `{"rules":{"nodeReady":"off","vmiState":"off"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{RuleVMIState: ModeOff}},
			errs: []wantErr{nsup("value.rules.nodeReady", "unknown rule", `"kubevirtReady"`, `"postCopyCancel"`)}},
		{name: "rule name case", raw: `{"rules":{"KubevirtReady":"off"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{}},
			errs: []wantErr{nsup("value.rules.KubevirtReady", `did you mean "kubevirtReady"`)}},
		{name: "bad mode", raw: `{"rules":{"networkReady":"audit"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{}},
			errs: []wantErr{nsup("value.rules.networkReady", "unknown mode", `"enforce"`, `"warn"`, `"off"`)}},
		{name: "empty mode", raw: `{"rules":{"networkReady":""}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{}},
			errs: []wantErr{nsup("value.rules.networkReady", "unknown mode")}},
		{name: "mode case", raw: `{"rules":{"networkReady":"Warn"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{}},
			errs: []wantErr{nsup("value.rules.networkReady", `did you mean "warn"`)}},
		{name: "mode not a string", raw: `{"rules":{"networkReady":true}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{}},
			errs: []wantErr{typ("value.rules.networkReady", "must be a JSON string, not a boolean")}},
		{name: "rules not an object", raw: `{"rules":["vmiState"]}`, want: &MigrationPolicy{},
			errs: []wantErr{typ("value.rules", "not an array")}},
		{name: "duplicate rule", raw: `{"rules":{"vmiState":"off","vmiState":"warn"}}`,
			want: &MigrationPolicy{Rules: map[Rule]Mode{RuleVMIState: ModeOff}},
			errs: []wantErr{dup("value.rules.vmiState", "keep a single")}},
		{name: "duplicate top-level key", raw: `{"exemptUsers":["a"],"exemptUsers":["b"]}`,
			want: &MigrationPolicy{ExemptUsers: []string{"a"}},
			errs: []wantErr{dup("value.exemptUsers")}},
		{name: "trailing data", raw: `{"exemptUsers":["a"]} {}`,
			want: &MigrationPolicy{ExemptUsers: []string{"a"}},
			errs: []wantErr{inv("value", "unexpected data")}},
		{name: "exemptUsers not an array", raw: `{"exemptUsers":"alice"}`, want: &MigrationPolicy{},
			errs: []wantErr{typ("value.exemptUsers", "array of strings")}},
		{name: "exemptUsers bad entries are dropped", raw: `{"exemptUsers":["alice","",3,null," bob","alice","carol"]}`,
			want: &MigrationPolicy{ExemptUsers: []string{"alice", "carol"}},
			errs: []wantErr{req("value.exemptUsers[1]", "must not be empty"), typ("value.exemptUsers[2]"),
				typ("value.exemptUsers[3]", "not null"), inv("value.exemptUsers[4]", `write "bob"`),
				dup("value.exemptUsers[5]", "index 0")}},
		{name: "malformed service accounts", raw: `{"exemptUsers":["system:serviceaccount:ns","system:serviceaccount::name","system:serviceaccount:ns:","system:serviceaccount:a:b:c","system:serviceaccount:ns:ok"]}`,
			want: &MigrationPolicy{ExemptUsers: []string{"system:serviceaccount:ns:ok"}},
			errs: []wantErr{inv("value.exemptUsers[0]", "system:serviceaccount:<namespace>:<name>"), inv("value.exemptUsers[1]"),
				inv("value.exemptUsers[2]"), inv("value.exemptUsers[3]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseMigrationPolicy(tc.raw, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("policy (-want +got):\n%s", d)
			}
		})
	}
}

func TestDefaultMigrationPolicy(t *testing.T) {
	p, errs := ParseMigrationPolicy(DefaultMigrationPolicy(), field.NewPath("default"))
	if len(errs) > 0 {
		t.Fatalf("DefaultMigrationPolicy() does not parse: %v", errs)
	}
	if len(p.Rules) != len(Registry()) {
		t.Errorf("DefaultMigrationPolicy() names %d rules, want all %d", len(p.Rules), len(Registry()))
	}
	for _, spec := range Registry() {
		r := spec.Rule
		if m, ok := p.Rules[r]; !ok || m != ModeEnforce {
			t.Errorf("rule %s: mode %q (present %v), want enforce", r, m, ok)
		}
	}
	if p.ExemptUsers == nil || len(p.ExemptUsers) != 0 {
		t.Errorf("exemptUsers %#v, want an empty list", p.ExemptUsers)
	}
}

func TestMigrationPolicyModeFor(t *testing.T) {
	p := &MigrationPolicy{
		Rules:       map[Rule]Mode{RuleNetworkReady: ModeWarn, RuleVMIState: ModeOff},
		ExemptUsers: []string{"system:serviceaccount:harvester-system:evacuator"},
	}
	const exempt, other = "system:serviceaccount:harvester-system:evacuator", "alice"
	tests := []struct {
		p    *MigrationPolicy
		rule Rule
		user string
		want Mode
	}{
		{p, RuleKubeVirtReady, other, ModeEnforce}, // not in the map
		{p, RuleNetworkReady, other, ModeWarn},
		{p, RuleVMIState, other, ModeOff},
		{p, RuleKubeVirtReady, exempt, ModeOff},
		{p, RuleNetworkReady, exempt, ModeOff},
		{p, RuleFeasibleTarget, exempt, ModeOff},
		{p, RuleVMIState, exempt, ModeOff}, // off for everyone
		{p, RulePostCopyCancel, exempt, ModeEnforce},
		{&MigrationPolicy{ExemptUsers: []string{"bob"}}, RuleVMIState, "bob", ModeEnforce},
		{nil, RuleFeasibleTarget, other, ModeEnforce},
		{nil, RuleFeasibleTarget, "", ModeEnforce},
		{&MigrationPolicy{ExemptUsers: []string{"bob"}}, RuleFeasibleTarget, "", ModeEnforce},
	}
	for _, tc := range tests {
		if got := tc.p.ModeFor(tc.rule, tc.user); got != tc.want {
			t.Errorf("ModeFor(%s, %q) = %s, want %s", tc.rule, tc.user, got, tc.want)
		}
	}
	if !p.Exempt(exempt) || p.Exempt(other) || p.Exempt("") || (*MigrationPolicy)(nil).Exempt(exempt) {
		t.Error("Exempt: wrong answer")
	}
	for _, spec := range Registry() {
		r := spec.Rule
		want := r != RuleVMIState && r != RulePostCopyCancel
		if r.Exemptable() != want {
			t.Errorf("%s.Exemptable() = %v, want %v", r, r.Exemptable(), want)
		}
	}
}
