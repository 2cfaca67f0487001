package webhook

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
)

// CacheSyncer is the part of the manager's cache SyncedCheck waits on.
type CacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// AllSynced waits for every one of its caches.
type AllSynced []CacheSyncer

// WaitForCacheSync implements CacheSyncer.
func (a AllSynced) WaitForCacheSync(ctx context.Context) bool {
	for _, c := range a {
		if !c.WaitForCacheSync(ctx) {
			return false
		}
	}
	return true
}

// SyncedCheck is a readiness check that passes once the informer caches admission reads have
// synced. Until then a replica would judge from a partial view — a VMI that exists reported
// "not found" — so it must not be sent traffic. It is a manager runnable that every replica runs,
// leader or not.
type SyncedCheck struct {
	Cache  CacheSyncer
	synced atomic.Bool
}

// Start waits for the caches, then marks the check passing until ctx ends.
func (s *SyncedCheck) Start(ctx context.Context) error {
	if s.Cache.WaitForCacheSync(ctx) {
		s.synced.Store(true)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every replica serves admission.
func (s *SyncedCheck) NeedLeaderElection() bool { return false }

// Check is the healthz.Checker.
func (s *SyncedCheck) Check(*http.Request) error {
	if !s.synced.Load() {
		return errors.New("informer caches not synced yet: admission would judge from a partial view")
	}
	return nil
}
