package webhook

import (
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

func kvWithNetwork(network *string) *kubevirtv1.KubeVirt {
	kv := checktest.ReadyKubeVirt()
	kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: network}
	return kv
}

func TestKubeVirtUpdateWarnings(t *testing.T) {
	nad, other, empty := checktest.NAD, "hand-made", ""
	tests := []struct {
		name     string
		old, new *kubevirtv1.KubeVirt
		want     string
		warn     []string
	}{
		{name: "changed to another NAD", old: kvWithNetwork(&nad), new: kvWithNetwork(&other), want: nad,
			warn: []string{`is "hand-made"`, "will put it back to " + nad, "change the setting vm-migration-network instead"}},
		{name: "removed by hand", old: kvWithNetwork(&nad), new: kvWithNetwork(nil), want: nad,
			warn: []string{"is unset", "put it back to " + nad}},
		{name: "set while the setting is empty", old: checktest.ReadyKubeVirt(), new: kvWithNetwork(&other), want: "",
			warn: []string{`is "hand-made"`, "unset it again"}},
		{name: "empty string reads as unset", old: checktest.ReadyKubeVirt(), new: kvWithNetwork(&empty), want: ""},
		{name: "changed to what the setting says", old: kvWithNetwork(&other), new: kvWithNetwork(&nad), want: nad},
		{name: "unrelated update", old: kvWithNetwork(&other), new: kvWithNetwork(&other), want: nad},
		{name: "no old object", old: nil, new: kvWithNetwork(&other), want: nad, warn: []string{`is "hand-made"`}},
		{name: "no new object", old: kvWithNetwork(&other), new: nil, want: nad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := KubeVirtUpdateWarnings(tc.old, tc.new, tc.want)
			if (len(got) > 0) != (len(tc.warn) > 0) || len(got) > 1 {
				t.Fatalf("warnings %q, want %d matching %q", got, min(len(tc.warn), 1), tc.warn)
			}
			for _, sub := range tc.warn {
				if !strings.Contains(got[0], sub) {
					t.Errorf("warning %q does not contain %q", got[0], sub)
				}
			}
		})
	}
}
