package health

import (
	"testing"
	"time"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

func TestNextStale(t *testing.T) {
	const net = "kubevirt/vm-migration-network-abc"
	// IntervalSeconds 10: a report is fresh until its round's completion + 30 s.
	h := Paths(net, []*v1beta1.PathReport{
		report("a", net, t0, t0),                    // completed t0+1s → stale at t0+31s
		report("b", net, t0, t0.Add(5*time.Second)), // stale at t0+36s
		report("c", net, t0, time.Time{}),           // no round: never fresh
		report("d", "kubevirt/old", t0, t0),         // another network
	})
	for _, tt := range []struct {
		now, want time.Time
	}{
		{t0, t0.Add(31 * time.Second)},
		{t0.Add(31 * time.Second), t0.Add(36 * time.Second)},
		{t0.Add(36 * time.Second), time.Time{}},
	} {
		if got := h.NextStale(tt.now); !got.Equal(tt.want) {
			t.Errorf("NextStale(%v) = %v, want %v", tt.now.Sub(t0), got, tt.want)
		}
	}
	if got := (*PathHealth)(nil).NextStale(t0); !got.IsZero() {
		t.Errorf("nil health: NextStale = %v, want zero", got)
	}
	if got, want := settings.NADRef("kubevirt", "vm-migration-network-abc"), net; got != want {
		t.Errorf("settings.NADRef = %q, want %q", got, want)
	}
	if got := settings.NADRef("kubevirt", ""); got != "" {
		t.Errorf("settings.NADRef of no network = %q, want empty", got)
	}
}
