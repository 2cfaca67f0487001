package sim

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt v1.8.4's defaults for what the migration monitor reads (pkg/virt-config/virt-config.go:
// MigrationProgressTimeout, MigrationCompletionTimeoutPerGiB, MigrationAllowPostCopy).
const (
	DefaultProgressTimeout         int64 = 150
	DefaultCompletionTimeoutPerGiB int64 = 150
)

// MonitorSleepPeriod is how often the monitor looks at the migration job (monitorSleepPeriodMS,
// pkg/virt-launcher/virtwrap/live-migration-source.go).
const MonitorSleepPeriod = 400 * time.Millisecond

// MigrationOptions are the monitor's inputs, as virt-handler's MigrationSourceController fills
// cmdclient.MigrationOptions (v1.8.4 migration-source.go, from the VMI's
// status.migrationState.migrationConfiguration, which virt-controller copies from the KubeVirt CR
// and a matching MigrationPolicy; AllowWorkloadDisruption defaults to AllowPostCopy).
type MigrationOptions struct {
	// ProgressTimeout in seconds; 0 turns the check off.
	ProgressTimeout int64
	// CompletionTimeoutPerGiB in seconds; 0 turns the check off.
	CompletionTimeoutPerGiB int64
	AllowPostCopy           bool
	AllowWorkloadDisruption bool
	// Bandwidth is bandwidthPerMigration in bytes per second; 0: no limit.
	Bandwidth int64
}

// OptionsFrom reads the options from a migration configuration (the VMI's migrationState's, or
// the KubeVirt CR's spec.configuration.migrations); unset fields take KubeVirt's defaults.
func OptionsFrom(c *kubevirtv1.MigrationConfiguration) MigrationOptions {
	o := MigrationOptions{ProgressTimeout: DefaultProgressTimeout, CompletionTimeoutPerGiB: DefaultCompletionTimeoutPerGiB}
	if c == nil {
		return o
	}
	if c.ProgressTimeout != nil {
		o.ProgressTimeout = *c.ProgressTimeout
	}
	if c.CompletionTimeoutPerGiB != nil {
		o.CompletionTimeoutPerGiB = *c.CompletionTimeoutPerGiB
	}
	if c.AllowPostCopy != nil {
		o.AllowPostCopy = *c.AllowPostCopy
	}
	o.AllowWorkloadDisruption = o.AllowPostCopy
	if c.AllowWorkloadDisruption != nil {
		o.AllowWorkloadDisruption = *c.AllowWorkloadDisruption
	}
	if c.BandwidthPerMigration != nil {
		o.Bandwidth = c.BandwidthPerMigration.Value()
	}
	return o
}

// OptionsFromVMIM reads the same options from the VMI's migrationState.migrationConfiguration
// (kubevirt.io/api v1.9.0 names its type VMIMConfigurationOptions; v1.8.4's virt-controller
// writes the same fields).
func OptionsFromVMIM(c *kubevirtv1.VMIMConfigurationOptions) MigrationOptions {
	if c == nil {
		return OptionsFrom(nil)
	}
	return OptionsFrom(&kubevirtv1.MigrationConfiguration{ProgressTimeout: c.ProgressTimeout, CompletionTimeoutPerGiB: c.CompletionTimeoutPerGiB,
		AllowPostCopy: c.AllowPostCopy, AllowWorkloadDisruption: c.AllowWorkloadDisruption, BandwidthPerMigration: c.BandwidthPerMigration})
}

// MigrationDataGB is the size the completion timeout is multiplied by, as v1.8.4's
// getVMIMigrationDataSize (pkg/virt-launcher/virtwrap/manager.go) computes it for a VMI without
// local disks to copy: the guest memory (spec.domain.memory.guest, else
// resources.requests.memory) in GB (10^9 bytes), rounded up (resource.Quantity.ScaledValue).
func MigrationDataGB(memory resource.Quantity) int64 { return memory.ScaledValue(resource.Giga) }

// GuestMemory is the memory a migration of vmi copies: spec.domain.memory.guest, else
// spec.domain.resources.requests.memory (getVMIMigrationDataSize's order).
func GuestMemory(vmi *kubevirtv1.VirtualMachineInstance) resource.Quantity {
	var m resource.Quantity
	if v, ok := vmi.Spec.Domain.Resources.Requests["memory"]; ok {
		m = v
	}
	if vmi.Spec.Domain.Memory != nil && vmi.Spec.Domain.Memory.Guest != nil {
		m = *vmi.Spec.Domain.Memory.Guest
	}
	return m
}

// MonitorAction is what the monitor does after one look at the job.
type MonitorAction int

const (
	// MonitorContinue: nothing to do.
	MonitorContinue MonitorAction = iota
	// MonitorStartPostCopy: switch to post-copy (dom.MigrateStartPostCopy).
	MonitorStartPostCopy
	// MonitorPause: pause the guest so the migration completes (dom.Suspend; mode Paused).
	MonitorPause
	// MonitorAbort: abort the job (dom.AbortJob); the reason is the migration's failureReason.
	MonitorAbort
)

// Monitor is KubeVirt v1.8.4's migration monitor on the source (migrationMonitor,
// pkg/virt-launcher/virtwrap/live-migration-source.go: startMonitor, processInflightMigration,
// isMigrationProgressing, shouldTriggerTimeout, shouldAssistMigrationToComplete), fed with the
// stream's remaining bytes instead of libvirt's job statistics. Pure: the caller passes the time.
type Monitor struct {
	opts MigrationOptions
	// acceptable is acceptableCompletionTime: CompletionTimeoutPerGiB × the data size in GB.
	acceptable   int64
	start        time.Time
	lastProgress time.Time
	watermark    uint64
}

// NewMonitor starts a monitor at start (m.start = m.lastProgressUpdate = now in startMonitor).
func NewMonitor(opts MigrationOptions, dataGB int64, start time.Time) *Monitor {
	return &Monitor{opts: opts, acceptable: opts.CompletionTimeoutPerGiB * dataGB, start: start, lastProgress: start}
}

// Observe is one pass of processInflightMigration with the job's remaining bytes, in mode: a
// sample below the previous one is progress (the first sample always is); then, in this order,
// post-copy is left alone (aborting it would lose the VM's state, which already runs on the
// target); past the completion time, a migration allowed to disrupt the workload is switched to
// post-copy (allowPostCopy) or paused, once; no progress for longer than progressTimeout aborts it,
// "Live migration stuck for %d seconds and has been aborted" (whole seconds since the last
// progress); past the completion time it is aborted, "Live migration is not completed after %d
// seconds and has been aborted".
func (m *Monitor) Observe(now time.Time, remaining uint64, mode kubevirtv1.MigrationMode) (MonitorAction, string) {
	if m.watermark == 0 || remaining < m.watermark {
		m.lastProgress = now
	}
	m.watermark = remaining
	elapsed := now.Sub(m.start)
	switch {
	case mode == kubevirtv1.MigrationPostCopy:
		return MonitorContinue, ""
	case m.opts.AllowWorkloadDisruption && m.pastCompletion(elapsed) && mode != kubevirtv1.MigrationPaused:
		if m.opts.AllowPostCopy {
			return MonitorStartPostCopy, ""
		}
		// A paused guest gets twice the time before the completion timeout cancels it.
		m.acceptable *= 2
		return MonitorPause, ""
	case m.stuck(now):
		return MonitorAbort, fmt.Sprintf("Live migration stuck for %d seconds and has been aborted", int64(now.Sub(m.lastProgress)/time.Second))
	case m.pastCompletion(elapsed):
		return MonitorAbort, fmt.Sprintf("Live migration is not completed after %d seconds and has been aborted", m.acceptable)
	}
	return MonitorContinue, ""
}

// stuck is !isMigrationProgressing: whole seconds without progress above progressTimeout.
func (m *Monitor) stuck(now time.Time) bool {
	return m.opts.ProgressTimeout != 0 && int64(now.Sub(m.lastProgress)/time.Second) > m.opts.ProgressTimeout
}

// pastCompletion is shouldTriggerTimeout: whole seconds since the start above the acceptable
// completion time (never when it is 0).
func (m *Monitor) pastCompletion(elapsed time.Duration) bool {
	return m.acceptable != 0 && int64(elapsed/time.Second) > m.acceptable
}
