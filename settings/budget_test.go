package settings

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestParseBudget(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want *Budget
		errs []wantErr
	}{
		{name: "no budget", raw: `{}`},
		{name: "null budget is none", raw: `{"budget":null}`},
		{name: "bandwidth only", raw: `{"budget":{"bandwidth":"1Gi"}}`, want: &Budget{Bandwidth: *q("1Gi")}},
		{name: "a JSON number is bytes", raw: `{"budget":{"bandwidth":1073741824}}`, want: &Budget{Bandwidth: *q("1073741824")}},
		{name: "decimal SI", raw: `{"budget":{"bandwidth":"1250M","inboundMigrations":3}}`, want: &Budget{Bandwidth: *q("1250M"), InboundMigrations: 3}},
		{name: "overrides", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"migranet.io/nic":"25g"},"bandwidth":"2500Mi","inboundMigrations":4},{"selector":{"zone":"a","rack":"r1"},"inboundMigrations":1}]}}`,
			want: &Budget{Bandwidth: *q("1Gi"), Nodes: []BudgetOverride{
				{Selector: map[string]string{"migranet.io/nic": "25g"}, Bandwidth: q("2500Mi"), InboundMigrations: 4},
				{Selector: map[string]string{"zone": "a", "rack": "r1"}, InboundMigrations: 1}}}},
		{name: "bandwidth missing", raw: `{"budget":{"inboundMigrations":2}}`, errs: []wantErr{req("value.budget.bandwidth", `remove "budget"`)}},
		{name: "bandwidth zero", raw: `{"budget":{"bandwidth":"0"}}`, errs: []wantErr{inv("value.budget.bandwidth", "above 0")}},
		{name: "bandwidth negative", raw: `{"budget":{"bandwidth":"-1Gi"}}`, errs: []wantErr{inv("value.budget.bandwidth", "above 0")}},
		{name: "bits are not a quantity", raw: `{"budget":{"bandwidth":"10Gbit"}}`, errs: []wantErr{inv("value.budget.bandwidth", "divide by 8", `"1Gi"`)}},
		{name: "padded", raw: `{"budget":{"bandwidth":" 1Gi"}}`, errs: []wantErr{inv("value.budget.bandwidth")}},
		{name: "at the bound", raw: `{"budget":{"bandwidth":"1Ti"}}`, want: &Budget{Bandwidth: *q("1Ti")}},
		{name: "one byte above the bound", raw: `{"budget":{"bandwidth":"1099511627777"}}`, errs: []wantErr{inv("value.budget.bandwidth", "at most 1Ti")}},
		{name: "bandwidth a boolean", raw: `{"budget":{"bandwidth":true}}`, errs: []wantErr{typ("value.budget.bandwidth", "not a boolean")}},
		{name: "budget not an object", raw: `{"budget":"1Gi"}`, want: nil, errs: []wantErr{typ("value.budget", `"bandwidth":"1Gi"`)}},
		{name: "unknown key, case", raw: `{"budget":{"Bandwidth":"1Gi","bandwidth":"1Gi"}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{nsup("value.budget.Bandwidth", `did you mean "bandwidth"`)}},
		{name: "inbound zero", raw: `{"budget":{"bandwidth":"1Gi","inboundMigrations":0}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{inv("value.budget.inboundMigrations", "cordon")}},
		{name: "inbound at its bound", raw: `{"budget":{"bandwidth":"1Gi","inboundMigrations":1000}}`, want: &Budget{Bandwidth: *q("1Gi"), InboundMigrations: 1000}},
		{name: "inbound one above", raw: `{"budget":{"bandwidth":"1Gi","inboundMigrations":1001}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{inv("value.budget.inboundMigrations", "between 1 and 1000")}},
		{name: "inbound quoted", raw: `{"budget":{"bandwidth":"1Gi","inboundMigrations":"2"}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{typ("value.budget.inboundMigrations", "drop the quotes")}},
		{name: "override without selector", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"bandwidth":"2Gi"}]}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{req("value.budget.nodes[0].selector")}},
		{name: "override that changes nothing", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"a":"b"}}]}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{req("value.budget.nodes[0]", "changes nothing")}},
		{name: "empty selector would match all", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{},"bandwidth":"2Gi"}]}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{req("value.budget.nodes[0].selector", "every node")}},
		{name: "bad label key and value", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"bad key":"x","ok":"bad value"},"bandwidth":"2Gi"},{"selector":{"zone":"a"},"bandwidth":"2Gi"}]}}`,
			want: &Budget{Bandwidth: *q("1Gi"), Nodes: []BudgetOverride{{Selector: map[string]string{"zone": "a"}, Bandwidth: q("2Gi")}}},
			errs: []wantErr{inv("value.budget.nodes[0].selector[bad key]", "label key"), inv("value.budget.nodes[0].selector[ok]", "label value")}},
		{name: "duplicate selectors", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"a":"b","c":"d"},"bandwidth":"2Gi"},{"selector":{"c":"d","a":"b"},"inboundMigrations":1}]}}`,
			want: &Budget{Bandwidth: *q("1Gi"), Nodes: []BudgetOverride{{Selector: map[string]string{"a": "b", "c": "d"}, Bandwidth: q("2Gi")}}},
			errs: []wantErr{dup("value.budget.nodes[1].selector", "entry 0")}},
		{name: "nodes not an array", raw: `{"budget":{"bandwidth":"1Gi","nodes":{"a":"b"}}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{typ("value.budget.nodes", "array of objects")}},
		{name: "unknown key in an override", raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"a":"b"},"bandwidth":"2Gi","weight":3}]}}`, want: &Budget{Bandwidth: *q("1Gi")},
			errs: []wantErr{nsup("value.budget.nodes[0].weight")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, errs := ParseMigrationPolicy(tc.raw, field.NewPath("value"))
			checkErrs(t, errs, tc.errs)
			if p == nil {
				t.Fatal("no policy")
			}
			if d := gocmp.Diff(tc.want, p.Budget); d != "" {
				t.Errorf("budget (-want +got):\n%s", d)
			}
		})
	}
}

// TestBudgetFor resolves a node's budget: the first override whose every label matches, exactly.
func TestBudgetFor(t *testing.T) {
	b := &Budget{Bandwidth: *q("1Gi"), InboundMigrations: 2, Nodes: []BudgetOverride{
		{Selector: map[string]string{"migranet.io/nic": "25g"}, Bandwidth: q("2500Mi")},
		{Selector: map[string]string{"migranet.io/nic": "25g", "zone": "a"}, InboundMigrations: 9}, // shadowed by the first
		{Selector: map[string]string{"zone": "b"}, InboundMigrations: 1},
	}}
	tests := []struct {
		name   string
		labels map[string]string
		want   NodeBudget
	}{
		{"no labels: the default", nil, NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 2, Override: -1}},
		{"matches the first", map[string]string{"migranet.io/nic": "25g"}, NodeBudget{Bandwidth: 2500 << 20, Override: 0}},
		{"first match wins", map[string]string{"migranet.io/nic": "25g", "zone": "a"}, NodeBudget{Bandwidth: 2500 << 20, Override: 0}},
		{"value differs in case: no match", map[string]string{"migranet.io/nic": "25G"}, NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 2, Override: -1}},
		{"key without its prefix: no match", map[string]string{"nic": "25g"}, NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 2, Override: -1}},
		{"value with a trailing space is another value", map[string]string{"zone": "b "}, NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 2, Override: -1}},
		{"inbound only: the default bandwidth", map[string]string{"zone": "b"}, NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 1, Override: 2}},
	}
	for _, tc := range tests {
		if got := b.For(tc.labels); got != tc.want {
			t.Errorf("%s: For(%v) = %+v, want %+v", tc.name, tc.labels, got, tc.want)
		}
	}
	if got := (*Budget)(nil).For(map[string]string{"zone": "b"}); got.Bandwidth != 0 {
		t.Errorf("no budget: %+v, want none", got)
	}
}
