package settings

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

func kvWith(m *kubevirtv1.MigrationConfiguration) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{}
	kv.Spec.Configuration.MigrationConfiguration = m
	return kv
}

func TestMigrationLimitsOf(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	def := MigrationLimits{CompletionTimeoutPerGiB: 150, ProgressTimeout: 150, ParallelOutboundPerNode: 2, ParallelPerCluster: 5}
	for _, tc := range []struct {
		name string
		kv   *kubevirtv1.KubeVirt
		want MigrationLimits
	}{
		{"no CR: KubeVirt's defaults", nil, def},
		{"no migrations block", kvWith(nil), def},
		{"0Mi is unlimited", kvWith(&kubevirtv1.MigrationConfiguration{BandwidthPerMigration: q("0Mi")}), def},
		{"set", kvWith(&kubevirtv1.MigrationConfiguration{BandwidthPerMigration: q("64Mi"), CompletionTimeoutPerGiB: i64(800),
			ProgressTimeout: i64(30), ParallelOutboundMigrationsPerNode: u32(1), ParallelMigrationsPerCluster: u32(3)}),
			MigrationLimits{BandwidthPerMigration: 64 << 20, CompletionTimeoutPerGiB: 800, ProgressTimeout: 30, ParallelOutboundPerNode: 1, ParallelPerCluster: 3}},
	} {
		if got := MigrationLimitsOf(tc.kv); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestNeed is what one migration needs on the wire, and the inbound limit derived from it.
func TestNeed(t *testing.T) {
	def := MigrationLimitsOf(nil)
	limited := def
	limited.BandwidthPerMigration = 64 << 20
	if got, want := limited.Need(), int64(71806485); got != want { // ⌈64 MiB × 1.07⌉
		t.Errorf("64Mi per migration: need %d, want %d", got, want)
	}
	if got, want := def.Need(), int64(7659359); got != want { // ⌈⌈1 GiB / 150⌉ × 1.07⌉
		t.Errorf("unlimited, 150 s per GiB: need %d, want %d", got, want)
	}
	for _, tc := range []struct {
		name string
		l    MigrationLimits
		bw   int64
		want int
	}{
		{"exactly two needs", limited, 2 * limited.Need(), 2},
		{"a byte short of two", limited, 2*limited.Need() - 1, 1},
		{"below one: still one", limited, limited.Need() / 2, 1},
		{"unlimited: KubeVirt's outbound limit", def, 1 << 30, 2},
		{"unlimited, room for one only", def, 2*def.Need() - 1, 1},
	} {
		if got := tc.l.DefaultInbound(tc.bw); got != tc.want {
			t.Errorf("%s: DefaultInbound(%d) = %d, want %d", tc.name, tc.bw, got, tc.want)
		}
	}
	if got := limited.InboundLimit(NodeBudget{Bandwidth: 1 << 30, InboundMigrations: 3}); got != 3 {
		t.Errorf("written inbound limit: %d, want 3", got)
	}
}

// TestValidateBudget judges budgets against the KubeVirt CR: the near miss is a budget exactly
// equal to one migration's need (admitted) and one byte below it (refused).
func TestValidateBudget(t *testing.T) {
	limited := MigrationLimitsOf(kvWith(&kubevirtv1.MigrationConfiguration{BandwidthPerMigration: q("64Mi")}))
	need := limited.Need()
	qty := func(v int64) string { return resource.NewQuantity(v, resource.BinarySI).String() }
	tests := []struct {
		name  string
		l     MigrationLimits
		raw   string
		errs  []wantErr
		warns [][]string
	}{
		{name: "exactly one migration's need, inbound 1, outbound 1", l: outbound(limited, 1),
			raw: `{"budget":{"bandwidth":"` + qty(need) + `","inboundMigrations":1}}`},
		{name: "a byte below one migration's need", l: limited, raw: `{"budget":{"bandwidth":"` + qty(need-1) + `"}}`,
			errs: []wantErr{inv("value.budget.bandwidth", "below what one migration needs", "bandwidthPerMigration 64Mi/s", "at least 69Mi")}},
		{name: "exactly the need, KubeVirt's 2 outbound share it", l: limited, raw: `{"budget":{"bandwidth":"` + qty(need) + `"}}`,
			warns: [][]string{{"value.budget.bandwidth: KubeVirt lets 2 migrations leave a node at once"}}},
		{name: "two inbound get exactly the need each", l: limited, raw: `{"budget":{"bandwidth":"` + qty(2*need) + `","inboundMigrations":2}}`},
		{name: "three inbound a byte short each", l: limited, raw: `{"budget":{"bandwidth":"` + qty(3*need-1) + `","inboundMigrations":3}}`,
			warns: [][]string{{"value.budget.inboundMigrations: 3 migrations streaming into a node share", "set it to at most 2"}}},
		{name: "override below the need", l: limited, raw: `{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"nic":"1g"},"bandwidth":"64Mi"}]}}`,
			errs: []wantErr{inv("value.budget.nodes[0].bandwidth", "below what one migration needs")}},
		{name: "override inherits the bandwidth, inbound too many", l: limited, raw: `{"budget":{"bandwidth":"256Mi","nodes":[{"selector":{"nic":"1g"},"inboundMigrations":4}]}}`,
			warns: [][]string{{"value.budget.nodes[0].inboundMigrations: 4 migrations"}}},
		{name: "unlimited per migration: the completion timeout's floor", l: MigrationLimitsOf(nil), raw: `{"budget":{"bandwidth":"7Mi"}}`,
			errs: []wantErr{inv("value.budget.bandwidth", "bandwidthPerMigration is unlimited", "completionTimeoutPerGiB (150 s)", "at least 8Mi")}},
		{name: "unlimited per migration, 16Mi: two outbound fit", l: MigrationLimitsOf(nil), raw: `{"budget":{"bandwidth":"16Mi"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := ValidateMigrationPolicy(tc.raw, field.NewPath("value"), tc.l)
			checkErrs(t, errs, tc.errs)
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %q, want %d", warns, len(tc.warns))
			}
			for i, parts := range tc.warns {
				for _, part := range parts {
					if !strings.Contains(warns[i], part) {
						t.Errorf("warning %q does not contain %q", warns[i], part)
					}
				}
			}
		})
	}
}

func outbound(l MigrationLimits, n int) MigrationLimits { l.ParallelOutboundPerNode = n; return l }

// TestJudgeSettingBudget: the setting webhook's judgement reads the KubeVirt CR's limits from the
// Cluster; without one, KubeVirt's defaults.
func TestJudgeSettingBudget(t *testing.T) {
	s := policySetting(`{"budget":{"bandwidth":"32Mi"}}`)
	if errs, _ := ValidateSetting(s, nil); len(errs) != 0 {
		t.Errorf("32Mi with KubeVirt's defaults: %v", errs)
	}
	cl := ClusterOf(nil, kvWith(&kubevirtv1.MigrationConfiguration{BandwidthPerMigration: q("64Mi")}), nil, nil)
	errs, _ := ValidateSetting(s, cl)
	checkErrs(t, errs, []wantErr{inv("value.budget.bandwidth", "64Mi/s")})
	if errs, _ := ValidateSetting(s, &Cluster{}); len(errs) != 0 {
		t.Errorf("a Cluster without limits judges with KubeVirt's defaults, got %v", errs)
	}
}

func policySetting(value string) *v1beta1.Setting {
	return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy}, Value: value}
}
