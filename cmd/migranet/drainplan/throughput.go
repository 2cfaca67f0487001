package drainplan

import (
	"fmt"
	"slices"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// DefaultThroughput is the throughput assumed for a path when nothing measured it and
// bandwidthPerMigration is unlimited: a 1 Gbit/s link, in bytes per second. The plan says so.
const DefaultThroughput int64 = 125_000_000

// Default overheads when no finished migration tells them: from the migration's creation to its
// stream's start (target pod scheduled and started, target prepared), and from the stream's end
// to the migration's Succeeded phase.
const (
	DefaultSetup  = 5 * time.Second
	DefaultFinish = 1 * time.Second
)

// recentPerPath is how many of a path's latest migrations its throughput is the median of.
const recentPerPath = 5

// Finished is one migration that ran, as the cluster records it.
type Finished struct {
	Source, Target string
	// Memory is its VMI's guest memory; Dirty the VMI's dirty rate where known now, else 0.
	Memory, Dirty int64
	// Stream is from migrationState.startTimestamp to endTimestamp; Setup from the VMIM's
	// creation to the stream's start; Finish from the stream's end to the VMIM's Succeeded
	// phase transition (0 when it carries none).
	Stream, Setup, Finish time.Duration
	Ended                 time.Time
}

// FinishedFrom reads one Succeeded migration and its VMI (nil: gone, its memory unknown) into a
// Finished; ok is false when they do not tell a stream (not Succeeded, no timestamps, no memory).
func FinishedFrom(m *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance, dirty int64) (Finished, bool) {
	ms := m.Status.MigrationState
	if m.Status.Phase != kubevirtv1.MigrationSucceeded || ms == nil || ms.StartTimestamp == nil || ms.EndTimestamp == nil ||
		ms.SourceNode == "" || ms.TargetNode == "" || vmi == nil {
		return Finished{}, false
	}
	mem := GuestMemory(vmi)
	f := Finished{Source: ms.SourceNode, Target: ms.TargetNode, Memory: mem.Value(), Dirty: dirty,
		Stream: ms.EndTimestamp.Sub(ms.StartTimestamp.Time), Setup: ms.StartTimestamp.Sub(m.CreationTimestamp.Time),
		Ended: ms.EndTimestamp.Time}
	for _, t := range m.Status.PhaseTransitionTimestamps {
		if t.Phase == kubevirtv1.MigrationSucceeded {
			f.Finish = max(0, t.PhaseTransitionTimestamp.Sub(ms.EndTimestamp.Time))
		}
	}
	return f, f.Memory > 0 && f.Stream > 0
}

// Measured is a throughput and where it came from.
type Measured struct {
	BytesPerSecond int64 `json:"bytesPerSecond"`
	// From says what was read, from where, in words.
	From string `json:"from"`
}

// Throughputs gives each path's throughput from the migrations that ran, capped by
// bandwidthPerMigration, else bandwidthPerMigration, else DefaultThroughput; and the overheads
// around a stream.
type Throughputs struct {
	opts     Options
	byPair   map[[2]string][]int64
	byTarget map[string][]int64
	bySource map[string][]int64
	all      []int64
	setup    []time.Duration
	finish   []time.Duration
	// Live is a path's throughput KubeVirt reports now (a migration streaming on it), by pair.
	Live map[[2]string]Measured
}

// NewThroughputs derives the throughputs from finished migrations (any order) under o.
func NewThroughputs(finished []Finished, o Options) *Throughputs {
	t := &Throughputs{opts: o, byPair: map[[2]string][]int64{}, byTarget: map[string][]int64{}, bySource: map[string][]int64{},
		Live: map[[2]string]Measured{}}
	slices.SortFunc(finished, func(a, b Finished) int { return b.Ended.Compare(a.Ended) }) // latest first
	for _, f := range finished {
		b, ok := InvertThroughput(f.Memory, f.Dirty, f.Stream, o)
		if !ok || b <= 0 {
			continue
		}
		pair := [2]string{f.Source, f.Target}
		if len(t.byPair[pair]) < recentPerPath {
			t.byPair[pair] = append(t.byPair[pair], b)
		}
		t.byTarget[f.Target] = append(t.byTarget[f.Target], b)
		t.bySource[f.Source] = append(t.bySource[f.Source], b)
		t.all = append(t.all, b)
		t.setup = append(t.setup, f.Setup)
		if f.Finish > 0 {
			t.finish = append(t.finish, f.Finish)
		}
	}
	return t
}

// Path is the throughput of a migration from source to target, and what it was read from.
func (t *Throughputs) Path(source, target string) Measured {
	m, ok := t.measured(source, target)
	if !ok {
		if t.opts.Bandwidth > 0 {
			return Measured{t.opts.Bandwidth, "bandwidthPerMigration " + Rate(t.opts.Bandwidth) + " (KubeVirt CR): no migration measured a path"}
		}
		return Measured{DefaultThroughput, "assumed " + Rate(DefaultThroughput) + " (1 Gbit/s): no migration measured a path and bandwidthPerMigration is unlimited"}
	}
	if t.opts.Bandwidth > 0 && t.opts.Bandwidth < m.BytesPerSecond {
		return Measured{t.opts.Bandwidth, fmt.Sprintf("bandwidthPerMigration %s (KubeVirt CR), below the measured %s (%s)", Rate(t.opts.Bandwidth), Rate(m.BytesPerSecond), m.From)}
	}
	return m
}

func (t *Throughputs) measured(source, target string) (Measured, bool) {
	if m, ok := t.Live[[2]string{source, target}]; ok {
		return m, true
	}
	what := "guest memory / stream time (migrationState start to end timestamps) of"
	if vs := t.byPair[[2]string{source, target}]; len(vs) > 0 {
		return Measured{median(vs), fmt.Sprintf("%s the %s on %s -> %s", what, count(len(vs)), source, target)}, true
	}
	if vs := t.byTarget[target]; len(vs) > 0 {
		return Measured{median(vs), fmt.Sprintf("%s the %s to %s (none on this path)", what, count(len(vs)), target)}, true
	}
	if vs := t.bySource[source]; len(vs) > 0 {
		return Measured{median(vs), fmt.Sprintf("%s the %s from %s (none to %s)", what, count(len(vs)), source, target)}, true
	}
	if len(t.all) > 0 {
		return Measured{median(t.all), fmt.Sprintf("%s the cluster's %s (none from %s or to %s)", what, count(len(t.all)), source, target)}, true
	}
	return Measured{}, false
}

// Overheads are the median setup and finish times of the migrations that ran, else the defaults,
// and what they were read from.
func (t *Throughputs) Overheads() (setup, finish time.Duration, from string) {
	setup, finish, from = DefaultSetup, DefaultFinish, fmt.Sprintf("assumed %s before and %s after each stream: no finished migration to read", DefaultSetup, DefaultFinish)
	if len(t.setup) > 0 {
		setup = median(t.setup)
		from = fmt.Sprintf("median of %s: VMIM creation to stream start %s", count(len(t.setup)), setup.Round(100*time.Millisecond))
		if len(t.finish) > 0 {
			finish = median(t.finish)
			from += fmt.Sprintf(", stream end to phase Succeeded %s", finish.Round(100*time.Millisecond))
		} else {
			from += fmt.Sprintf(", %s after each stream assumed", finish)
		}
	}
	return setup, finish, from
}

func count(n int) string {
	if n == 1 {
		return "1 finished migration"
	}
	return fmt.Sprintf("%d finished migrations", n)
}

// median is the middle of vs (the mean of the two middle ones for an even count).
func median[T int64 | time.Duration](vs []T) T {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Rate words bytes per second: "64.0 MiB/s".
func Rate(b int64) string {
	return fmt.Sprintf("%.1f MiB/s", float64(b)/(1<<20))
}
