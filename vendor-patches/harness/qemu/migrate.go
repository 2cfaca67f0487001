package qemu

import (
	"fmt"
	"time"
)

// Options of one migration.
type Options struct {
	Multifd  int   // multifd channels; 0 = off
	MaxBytes int64 // max-bandwidth in bytes/s (QEMU 7.2 defaults to 128 MiB/s)
	Timeout  time.Duration
}

// MigrationInfo is the part of query-migrate the suite checks.
type MigrationInfo struct {
	Status    string `json:"status"`
	TotalTime int64  `json:"total-time"`
	RAM       struct {
		Transferred    int64 `json:"transferred"`
		DirtySyncCount int64 `json:"dirty-sync-count"`
	} `json:"ram"`
}

// Prepare sets capabilities and parameters on one side.
func Prepare(q *QMP, o Options) error {
	if o.Multifd > 0 {
		caps := map[string]any{"capabilities": []map[string]any{{"capability": "multifd", "state": true}}}
		if err := q.Do("migrate-set-capabilities", caps, nil); err != nil {
			return err
		}
	}
	params := map[string]any{"max-bandwidth": o.MaxBytes}
	if o.Multifd > 0 {
		params["multifd-channels"] = o.Multifd
	}
	return q.Do("migrate-set-parameters", params, nil)
}

// Incoming makes dst listen on uri.
func Incoming(dst *QMP, uri string) error {
	return dst.Do("migrate-incoming", map[string]any{"uri": uri}, nil)
}

// Migrate starts src towards uri and waits, bounded by o.Timeout, for the
// migration to end; on timeout it cancels it. The destination must then report
// running.
func Migrate(src, dst *QMP, uri string, o Options) (MigrationInfo, time.Duration, error) {
	start := time.Now()
	if err := src.Do("migrate", map[string]any{"uri": uri}, nil); err != nil {
		return MigrationInfo{}, 0, err
	}
	info, err := WaitMigration(src, o.Timeout)
	elapsed := time.Since(start)
	if err != nil {
		_ = src.Do("migrate_cancel", nil, nil)
		return info, elapsed, err
	}
	if err := waitRunning(dst, 20*time.Second); err != nil {
		return info, elapsed, err
	}
	var dinfo MigrationInfo
	if err := dst.Do("query-migrate", nil, &dinfo); err != nil {
		return info, elapsed, err
	}
	if dinfo.Status != "completed" {
		return info, elapsed, fmt.Errorf("destination migration status %q, want completed", dinfo.Status)
	}
	return info, elapsed, nil
}

// WaitMigration polls query-migrate until completed or failed, at most d.
func WaitMigration(src *QMP, d time.Duration) (MigrationInfo, error) {
	deadline := time.Now().Add(d)
	var info MigrationInfo
	for time.Now().Before(deadline) {
		if err := src.Do("query-migrate", nil, &info); err != nil {
			return info, err
		}
		switch info.Status {
		case "completed":
			if info.TotalTime == 0 { // QEMU 7.2 can report this once; ask again
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return info, nil
		case "failed", "cancelled":
			return info, fmt.Errorf("migration %s", info.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return info, fmt.Errorf("migration not done after %s (status %q)", d, info.Status)
}

func waitRunning(q *QMP, d time.Duration) error {
	deadline := time.Now().Add(d)
	var st struct {
		Status string `json:"status"`
	}
	for time.Now().Before(deadline) {
		if err := q.Do("query-status", nil, &st); err != nil {
			return err
		}
		if st.Status == "running" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("destination status %q after %s, want running", st.Status, d)
}
