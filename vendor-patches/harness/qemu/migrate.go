package qemu

import (
	"fmt"
	"github.com/migranet/migranet/vendor-patches/harness/poll"
	"time"
)

// Options of one migration.
type Options struct {
	Multifd  int   // multifd channels; 0 = off
	MaxBytes int64 // max-bandwidth in bytes/s (QEMU 7.2 defaults to 128 MiB/s)
	Timeout  time.Duration
	// ReturnPath turns on QEMU's return path, so the destination talks back on
	// the migration connection (the proxies' from_target direction).
	ReturnPath bool
	// MemBytes is the guest RAM compared after the migration (0: MemSize).
	MemBytes int64
	// Landed, when set, is called once the destination has landed the
	// migration, before the memory is compared (the bench reads CPU times there).
	Landed func()
}

// MigrationInfo is the part of query-migrate the suite checks.
type MigrationInfo struct {
	Status    string `json:"status"`
	TotalTime int64  `json:"total-time"` // ms
	Downtime  int64  `json:"downtime"`   // ms, once completed
	RAM       struct {
		Transferred    int64 `json:"transferred"`
		Total          int64 `json:"total"`
		DirtySyncCount int64 `json:"dirty-sync-count"`
		MultifdBytes   int64 `json:"multifd-bytes"`
	} `json:"ram"`
}

// Prepare sets capabilities and parameters on one side.
func Prepare(q *QMP, o Options) error {
	var caps []map[string]any
	if o.Multifd > 0 {
		caps = append(caps, map[string]any{"capability": "multifd", "state": true})
	}
	if o.ReturnPath {
		caps = append(caps, map[string]any{"capability": "return-path", "state": true})
	}
	if len(caps) > 0 {
		if err := q.Do("migrate-set-capabilities", map[string]any{"capabilities": caps}, nil); err != nil {
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
// migration to end; on timeout it cancels it. The destination (started with -S)
// must then have landed the migration, paused; the guest memory of both sides
// must be equal (CompareMemory); then the destination is resumed and must report
// running. The duration returned ends when the source reports completion.
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
	if err := WaitStatus(dst, "paused", 20*time.Second); err != nil {
		return info, elapsed, fmt.Errorf("destination after the migration: %w", err)
	}
	var dinfo MigrationInfo
	if err := dst.Do("query-migrate", nil, &dinfo); err != nil {
		return info, elapsed, err
	}
	if dinfo.Status != "completed" {
		return info, elapsed, fmt.Errorf("destination migration status %q, want completed", dinfo.Status)
	}
	if o.Landed != nil {
		o.Landed()
	}
	size := o.MemBytes
	if size == 0 {
		size = MemSize
	}
	if err := CompareMemory(src, dst, size); err != nil {
		return info, elapsed, err
	}
	if err := dst.Do("cont", nil, nil); err != nil {
		return info, elapsed, err
	}
	if err := WaitStatus(dst, "running", 20*time.Second); err != nil {
		return info, elapsed, fmt.Errorf("destination after cont: %w", err)
	}
	return info, elapsed, nil
}

// WaitMigration polls query-migrate until completed or failed, at most d.
func WaitMigration(src *QMP, d time.Duration) (MigrationInfo, error) {
	var info MigrationInfo
	done, err := poll.UntilErr(d, func() (bool, error) {
		if err := src.Do("query-migrate", nil, &info); err != nil {
			return false, err
		}
		switch info.Status {
		case "completed":
			return info.TotalTime != 0, nil // QEMU 7.2 can report 0 once; ask again
		case "failed", "cancelled":
			return false, fmt.Errorf("migration %s", info.Status)
		}
		return false, nil
	})
	if err == nil && !done {
		err = fmt.Errorf("migration not done after %s (status %q)", d, info.Status)
	}
	return info, err
}

// WaitStatus polls query-status until want, at most d.
func WaitStatus(q *QMP, want string, d time.Duration) error {
	var st struct {
		Status string `json:"status"`
	}
	done, err := poll.UntilErr(d, func() (bool, error) {
		err := q.Do("query-status", nil, &st)
		return err == nil && st.Status == want, err
	})
	if err == nil && !done {
		err = fmt.Errorf("status %q after %s, want %s", st.Status, d, want)
	}
	return err
}

// WaitTransferred polls query-migrate until at least n bytes of RAM were
// transferred or the migration ended, at most d.
func WaitTransferred(src *QMP, n int64, d time.Duration) (MigrationInfo, error) {
	var info MigrationInfo
	done, err := poll.UntilErr(d, func() (bool, error) {
		if err := src.Do("query-migrate", nil, &info); err != nil {
			return false, err
		}
		return info.RAM.Transferred >= n || (info.Status != "active" && info.Status != "setup"), nil
	})
	if err == nil && !done {
		err = fmt.Errorf("%d bytes not transferred after %s (status %q, %d bytes)", n, d, info.Status, info.RAM.Transferred)
	}
	return info, err
}
