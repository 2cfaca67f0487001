package webhook

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

func TestDeriveSettings(t *testing.T) {
	network := `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
	want := settings.EffectiveNetwork(&v1beta1.Setting{Value: network}).Hash
	setting := func(name, value string) *v1beta1.Setting {
		return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	}
	tests := []struct {
		name   string
		items  []any
		hash   string
		policy bool // a policy was parsed
	}{
		{name: "none"},
		{name: "network and policy", items: []any{setting(v1beta1.MigrationPolicy, `{"rules":{"feasibleTarget":"warn"}}`), setting(v1beta1.MigrationNetwork, network)},
			hash: want, policy: true},
		{name: "invalid network has no hash", items: []any{setting(v1beta1.MigrationNetwork, `{"range":`)}},
		{name: "other settings and objects are ignored", items: []any{setting("other", network), "not a setting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := deriveSettings(tt.items)
			if v.hash != tt.hash || (v.policy != nil) != tt.policy {
				t.Fatalf("hash %q policy %v; want %q, policy %v", v.hash, v.policy, tt.hash, tt.policy)
			}
		})
	}
}

func TestDeriveKubeVirt(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kv := func(ns, name string, at metav1.Time) *kubevirtv1.KubeVirt {
		return &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: at}}
	}
	newer := metav1.NewTime(old.Add(time.Minute))
	got := deriveKubeVirt("kubevirt")([]any{kv("kubevirt", "b", newer), kv("other", "a", old), kv("kubevirt", "c", old)})
	if got.kv == nil || got.kv.Name != "c" {
		t.Fatalf("in force: %v, want kubevirt/c (the oldest in the namespace)", got.kv)
	}
	if none := deriveKubeVirt("kubevirt")(nil); none.kv != nil {
		t.Fatalf("no CR: %v", none.kv)
	}
}
