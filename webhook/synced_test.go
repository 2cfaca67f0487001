package webhook

import (
	"context"
	"testing"
	"time"
)

// gate is a CacheSyncer whose sync completes when release is closed.
type gate struct{ release chan struct{} }

func (g gate) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-g.release:
		return true
	case <-ctx.Done():
		return false
	}
}

func TestSyncedCheckFailsUntilCachesSync(t *testing.T) {
	g := gate{release: make(chan struct{})}
	s := &SyncedCheck{Cache: g}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	if err := s.Check(nil); err == nil {
		t.Fatal("ready before the caches synced")
	}
	close(g.release)
	deadline := time.Now().Add(5 * time.Second)
	for s.Check(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatal("not ready 5 s after the caches synced")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

func TestSyncedCheckStaysFailingWhenStoppedBeforeSync(t *testing.T) {
	s := &SyncedCheck{Cache: gate{release: make(chan struct{})}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Check(nil) == nil {
		t.Fatal("ready although the caches never synced")
	}
	if s.NeedLeaderElection() {
		t.Fatal("every replica must run the check")
	}
}
