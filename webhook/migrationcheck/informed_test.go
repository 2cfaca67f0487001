package migrationcheck

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// TestViewOf: the one derivation of what admission reads of the settings, for both States.
func TestViewOf(t *testing.T) {
	network := `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24"}`
	want := settings.EffectiveNetwork(&v1beta1.Setting{Value: network}).Hash
	setting := func(name, value string) *v1beta1.Setting {
		return &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	}
	tests := []struct {
		name              string
		policyS, networkS *v1beta1.Setting
		hash              string
		parsedPolicy      bool
	}{
		{name: "none"},
		{name: "network and policy", policyS: setting(v1beta1.MigrationPolicy, `{"rules":{"feasibleTarget":"warn"}}`),
			networkS: setting(v1beta1.MigrationNetwork, network), hash: want, parsedPolicy: true},
		{name: "invalid network has no hash", networkS: setting(v1beta1.MigrationNetwork, `{"range":`)},
		{name: "default policy", policyS: setting(v1beta1.MigrationPolicy, ""), parsedPolicy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ViewOf(tt.policyS, tt.networkS)
			if v.Hash != tt.hash || (v.Policy != nil) != tt.parsedPolicy {
				t.Fatalf("hash %q policy %v; want %q, policy %v", v.Hash, v.Policy, tt.hash, tt.parsedPolicy)
			}
		})
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
