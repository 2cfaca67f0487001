package settings

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

func TestPolicySummary(t *testing.T) {
	for _, tc := range []struct{ value, def, want string }{
		{"", "", "all enforced"},
		{"", DefaultMigrationPolicy(), "all enforced"},
		{`{"rules":{"feasibleTarget":"warn"}}`, "", "feasibleTarget=warn"},
		{`{"rules":{"postCopyCancel":"off","kubevirtReady":"warn"},"exemptUsers":["a","b"]}`, "", "kubevirtReady=warn postCopyCancel=off (2 exempt)"},
		{`{"rules":{"feasibleTarget":"enforce"},"exemptUsers":["system:serviceaccount:kubevirt:kubevirt-controller"]}`, "", "all enforced (1 exempt)"},
		{`{"rules":{"feasibleTarget":"sometimes"}}`, "", "invalid"},
		{`not json`, "", "invalid"},
		{`{"budget":{"bandwidth":"1Gi"}}`, "", "all enforced, budget 1Gi/s"},
		{`{"rules":{"feasibleTarget":"warn"},"budget":{"bandwidth":"1536Mi","nodes":[{"selector":{"a":"b"},"bandwidth":"2Gi"}]}}`, "",
			"feasibleTarget=warn, budget 1.5Gi/s (+1 node override)"},
		{`{"budget":{"bandwidth":"1Gi","nodes":[{"selector":{"a":"b"},"inboundMigrations":1},{"selector":{"a":"c"},"inboundMigrations":1}]}}`, "",
			"all enforced, budget 1Gi/s (+2 node overrides)"},
	} {
		s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy}, Value: tc.value, Default: tc.def}
		if got := PolicySummary(s); got != tc.want {
			t.Errorf("value %q default %q: summary %q, want %q", tc.value, tc.def, got, tc.want)
		}
	}
}
