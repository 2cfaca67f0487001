package migrationcheck

import (
	"context"
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

// TestInformedFirstReadersWait checks that readers arriving while the first derivation runs wait
// for it instead of reading nothing. Fault caught (seen as a nil-pointer panic in admission when a
// restarted replica took its first requests concurrently): the second reader finds the dirty flag
// already cleared by the first and returns the value not yet stored.
func TestInformedFirstReadersWait(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	i := &informed[int]{derive: func(context.Context) (*int, error) {
		close(started)
		<-release
		v := 7
		return &v, nil
	}}
	i.dirty.Store(true)
	first := make(chan *int)
	go func() { v, _ := i.get(context.Background()); first <- v }()
	<-started
	second := make(chan *int)
	go func() { v, _ := i.get(context.Background()); second <- v }()
	select {
	case v := <-second:
		t.Fatalf("a second reader returned %v while the first derivation was still running", v)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if v := <-first; v == nil || *v != 7 {
		t.Errorf("first reader got %v", v)
	}
	if v := <-second; v == nil || *v != 7 {
		t.Errorf("second reader got %v, want the derived value", v)
	}
}
