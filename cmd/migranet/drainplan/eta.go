package drainplan

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt v1.8.4's defaults for what the model reads (pkg/virt-config/virt-config.go).
const (
	DefaultParallelOutboundPerNode       = 2
	DefaultParallelPerCluster            = 5
	DefaultProgressTimeout         int64 = 150
	DefaultCompletionTimeoutPerGiB int64 = 150
)

// DowntimeLimit is QEMU's default downtime-limit, which KubeVirt leaves alone: pre-copy stops
// the guest for its last round once the memory left fits in this much time.
const DowntimeLimit = 300 * time.Millisecond

// QEMU's auto-converge throttle (migration parameters cpu-throttle-initial and
// cpu-throttle-increment, their defaults): the guest's vCPUs are slowed once, in two syncs, it
// dirtied more than half of what the round sent.
const (
	throttleInitial   = 0.20
	throttleIncrement = 0.10
	throttleMax       = 0.99
)

// maxRounds bounds the pre-copy simulation; a migration that needs more never converges in
// practice.
const maxRounds = 10000

// Options are KubeVirt's migration settings the model reads: the KubeVirt CR's
// spec.configuration.migrations, KubeVirt's defaults for what it leaves unset.
type Options struct {
	// Bandwidth is bandwidthPerMigration in bytes per second; 0 is unlimited.
	Bandwidth               int64 `json:"bandwidthPerMigration"`
	CompletionTimeoutPerGiB int64 `json:"completionTimeoutPerGiB"`
	ProgressTimeout         int64 `json:"progressTimeout"`
	AllowAutoConverge       bool  `json:"allowAutoConverge"`
	AllowPostCopy           bool  `json:"allowPostCopy"`
	// AllowWorkloadDisruption defaults to AllowPostCopy, as in KubeVirt.
	AllowWorkloadDisruption bool `json:"allowWorkloadDisruption"`
	ParallelOutboundPerNode int  `json:"parallelOutboundMigrationsPerNode"`
	ParallelPerCluster      int  `json:"parallelMigrationsPerCluster"`
}

// OptionsFrom reads the options from the KubeVirt CR in force (nil: KubeVirt's defaults).
func OptionsFrom(kv *kubevirtv1.KubeVirt) Options {
	o := Options{CompletionTimeoutPerGiB: DefaultCompletionTimeoutPerGiB, ProgressTimeout: DefaultProgressTimeout,
		ParallelOutboundPerNode: DefaultParallelOutboundPerNode, ParallelPerCluster: DefaultParallelPerCluster}
	if kv == nil || kv.Spec.Configuration.MigrationConfiguration == nil {
		return o
	}
	c := kv.Spec.Configuration.MigrationConfiguration
	if c.BandwidthPerMigration != nil {
		o.Bandwidth = c.BandwidthPerMigration.Value()
	}
	if c.CompletionTimeoutPerGiB != nil {
		o.CompletionTimeoutPerGiB = *c.CompletionTimeoutPerGiB
	}
	if c.ProgressTimeout != nil {
		o.ProgressTimeout = *c.ProgressTimeout
	}
	if c.AllowAutoConverge != nil {
		o.AllowAutoConverge = *c.AllowAutoConverge
	}
	if c.AllowPostCopy != nil {
		o.AllowPostCopy = *c.AllowPostCopy
	}
	o.AllowWorkloadDisruption = o.AllowPostCopy
	if c.AllowWorkloadDisruption != nil {
		o.AllowWorkloadDisruption = *c.AllowWorkloadDisruption
	}
	if c.ParallelOutboundMigrationsPerNode != nil {
		o.ParallelOutboundPerNode = int(*c.ParallelOutboundMigrationsPerNode)
	}
	if c.ParallelMigrationsPerCluster != nil {
		o.ParallelPerCluster = int(*c.ParallelMigrationsPerCluster)
	}
	return o
}

// GuestMemory is the memory a migration of vmi copies, as KubeVirt sizes it:
// spec.domain.memory.guest, else resources.requests.memory, else resources.limits.memory.
func GuestMemory(vmi *kubevirtv1.VirtualMachineInstance) resource.Quantity {
	d := vmi.Spec.Domain
	if d.Memory != nil && d.Memory.Guest != nil {
		return *d.Memory.Guest
	}
	if q, ok := d.Resources.Requests["memory"]; ok {
		return q
	}
	return d.Resources.Limits["memory"]
}

// Outcomes of one migration.
const (
	// Converges: pre-copy converges (auto-converge included) before the completion timeout.
	Converges = "converges"
	// PostCopy: pre-copy does not converge in time; KubeVirt switches to post-copy at the
	// completion timeout (allowPostCopy with allowWorkloadDisruption).
	PostCopy = "post-copy"
	// Paused: as PostCopy, but KubeVirt pauses the guest to finish (allowWorkloadDisruption
	// without allowPostCopy).
	Paused = "paused"
	// Aborted: KubeVirt aborts it at the completion timeout ("Live migration is not completed
	// after N seconds"): the drain retries it and cannot complete.
	Aborted = "aborted"
)

// Estimate is one migration's expected stream.
type Estimate struct {
	// Stream is from the stream's start to its end (completion, or the abort).
	Stream  time.Duration `json:"-"`
	Outcome string        `json:"outcome"`
	// Converges is whether pre-copy alone could converge at all (dirty rate below throughput,
	// auto-converge aside).
	Converges bool `json:"precopyCanConverge"`
	// Rounds is the number of pre-copy rounds (the last one with the guest stopped).
	Rounds int `json:"rounds"`
	// Transferred is the bytes the stream sends.
	Transferred int64 `json:"transferredBytes"`
	// CompletionTimeout is KubeVirt's acceptable completion time for this guest.
	CompletionTimeout time.Duration `json:"-"`
	// Advice says which KubeVirt settings would change an outcome other than Converges.
	Advice string `json:"advice,omitempty"`
}

// DataGB is the size KubeVirt multiplies completionTimeoutPerGiB by (getVMIMigrationDataSize):
// the guest memory in GB (10^9 bytes), rounded up.
func DataGB(memory int64) int64 {
	return (memory + 999_999_999) / 1_000_000_000
}

// EstimateStream is the stream of a guest of memory bytes that dirties dirty bytes a second,
// over a path carrying throughput bytes a second, under o: QEMU's pre-copy rounds (each round
// after the first sends what the guest dirtied during the one before, at most memory; the last
// once it fits DowntimeLimit), auto-converge's throttle when allowed, and KubeVirt's migration
// monitor at the completion timeout (completionTimeoutPerGiB × DataGB): post-copy, pause, or
// abort. throughput must be positive.
func EstimateStream(memory, dirty, throughput int64, o Options) Estimate {
	b := float64(throughput)
	e := Estimate{Converges: dirty < throughput,
		CompletionTimeout: time.Duration(o.CompletionTimeoutPerGiB*DataGB(memory)) * time.Second}
	limit := e.CompletionTimeout.Seconds()
	if o.CompletionTimeoutPerGiB == 0 {
		limit = math.Inf(1)
	}
	t, round, throttle, high := 0.0, float64(memory), 0.0, 0
	for e.Rounds = 1; e.Rounds <= maxRounds; e.Rounds++ {
		d := round / b
		if t+d > limit {
			// The monitor acts at the completion timeout, in the middle of this round.
			left := round - (limit-t)*b
			return e.atTimeout(limit, left, float64(dirty)*(1-throttle), b, o)
		}
		t += d
		e.Transferred += int64(round)
		rate := float64(dirty) * (1 - throttle)
		next := math.Min(float64(memory), rate*d)
		if next <= b*DowntimeLimit.Seconds() {
			// The last round, the guest stopped.
			t += next / b
			e.Transferred += int64(next)
			e.Rounds++
			e.Outcome, e.Stream = Converges, seconds(t)
			return e
		}
		if o.AllowAutoConverge {
			if next > round/2 {
				high++
			} else {
				high = 0
			}
			if high >= 2 {
				throttle, high = math.Min(throttleMax, throttle+throttleIncrement), 0
				if throttle < throttleInitial {
					throttle = throttleInitial
				}
			}
		}
		round = next
	}
	return e.atTimeout(t, round, float64(dirty)*(1-throttle), b, o)
}

// atTimeout ends the estimate at the completion timeout, at, with left bytes of the current
// round unsent and the guest dirtying rate bytes a second.
func (e Estimate) atTimeout(at, left, rate, b float64, o Options) Estimate {
	e.Advice = advice(o)
	if !o.AllowWorkloadDisruption {
		e.Outcome, e.Stream = Aborted, seconds(at)
		return e
	}
	// Post-copy or a paused guest: what is left of the round, then what it dirtied meanwhile
	// (nothing more: the guest no longer runs on the source).
	e.Outcome = Paused
	if o.AllowPostCopy {
		e.Outcome = PostCopy
	}
	rest := left + math.Min(rate*left/b, left)
	e.Transferred += int64(rest)
	e.Stream = seconds(at + rest/b)
	return e
}

// advice says which KubeVirt settings (the KubeVirt CR's spec.configuration.migrations) would let
// a migration that does not converge in time complete, or complete without disruption.
func advice(o Options) string {
	var s string
	switch {
	case !o.AllowAutoConverge && !o.AllowWorkloadDisruption:
		s = "set allowAutoConverge: true (QEMU slows the guest's vCPUs until it converges), or allowPostCopy: true (post-copy at the completion timeout)"
	case !o.AllowAutoConverge:
		s = "allowAutoConverge: true would let pre-copy converge by slowing the guest instead"
	default:
		s = "allowPostCopy: true (with allowWorkloadDisruption) would finish it in post-copy at the completion timeout"
	}
	return s + " in the KubeVirt CR's spec.configuration.migrations, or raise the path's throughput (bandwidthPerMigration, the migration network)"
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// InvertThroughput is the throughput that makes EstimateStream of a guest of memory bytes
// dirtying dirty bytes a second take took: what a finished migration says of its path. With
// no dirty rate it is memory/took; ok is false when no throughput explains took (the migration
// did not converge by pre-copy).
func InvertThroughput(memory, dirty int64, took time.Duration, o Options) (int64, bool) {
	if took <= 0 || memory <= 0 {
		return 0, false
	}
	lo := float64(memory) / took.Seconds() // pre-copy sends the memory at least once
	if dirty <= 0 {
		return int64(lo), true
	}
	o.CompletionTimeoutPerGiB, o.AllowAutoConverge = 0, false // the stream as it ran, no monitor
	streamOf := func(b float64) time.Duration {
		e := EstimateStream(memory, dirty, int64(b), o)
		if e.Outcome != Converges {
			return time.Duration(math.MaxInt64)
		}
		return e.Stream
	}
	hi := math.Max(lo*64, float64(dirty)*64)
	if streamOf(hi) > took {
		return 0, false
	}
	for range 60 {
		mid := (lo + hi) / 2
		if streamOf(mid) > took {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int64(hi), true
}

// Words says an Estimate in one phrase for the table.
func (e Estimate) Words() string {
	switch e.Outcome {
	case Converges:
		return fmt.Sprintf("converges in %d rounds", e.Rounds)
	case PostCopy:
		return fmt.Sprintf("pre-copy does not converge within the completion timeout (%s): post-copy then", e.CompletionTimeout)
	case Paused:
		return fmt.Sprintf("pre-copy does not converge within the completion timeout (%s): KubeVirt pauses the guest then", e.CompletionTimeout)
	}
	return fmt.Sprintf("cannot converge: KubeVirt aborts it after its completion timeout (%s)", e.CompletionTimeout)
}
