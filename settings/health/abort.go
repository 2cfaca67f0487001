package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Events and annotation of the runningPathHealthy rule, named here because `migranet status`
// reads them as much as the path-abort controller writes them.
const (
	// ReasonMigrationPathBroken is the Warning event, on the VMIM and on its VMI, of a migration
	// migranet aborted (rule enforce) because its path failed while it streamed.
	ReasonMigrationPathBroken = "MigrationAbortedPathBroken"
	// ReasonMigrationPathFailing is the Warning event of the same finding with the rule at warn:
	// nothing is aborted.
	ReasonMigrationPathFailing = "MigrationPathFailing"
	// AbortedAnnotation is set on a VMIM once migranet's delete of it succeeded: the reason, in one
	// line. KubeVirt keeps a deleted VMIM until the abort completes (virt-api's create mutator adds
	// the finalizer kubevirt.io/migrationJobFinalize, virt-controller removes it once the migration
	// is final), so it is readable meanwhile; once the VMIM is gone the events tell the abort.
	AbortedAnnotation = "migranet.io/aborted"
)

// AbortedBy is why migranet aborted vmim (AbortedAnnotation), "" when it did not. The annotation
// counts only on a VMIM being deleted: it records a delete that succeeded, and one on a VMIM that
// was not deleted is left over from a delete that failed (migranet v0.2.0 wrote it before the
// delete), so a migration that then completed reads completed, not aborted.
func AbortedBy(vmim *kubevirtv1.VirtualMachineInstanceMigration) string {
	if vmim == nil || vmim.DeletionTimestamp == nil {
		return ""
	}
	return vmim.Annotations[AbortedAnnotation]
}

// AbortAction is what the runningPathHealthy rule does about one migration.
type AbortAction int

// The actions.
const (
	// AbortNone: nothing (the migration is not judged, or its path does not fail).
	AbortNone AbortAction = iota
	// AbortWarn: record that the path fails (rule at warn).
	AbortWarn
	// AbortDelete: abort the migration by deleting its VMIM (rule at enforce).
	AbortDelete
)

// AbortDecision is DecideAbort's answer.
type AbortDecision struct {
	Action AbortAction
	// Faults are the failing directions between the migration's source and target that count
	// (fresh, from rounds that started after it began), the source's own report first.
	Faults []PathFault
	// Message says, for AbortWarn and AbortDelete, what failed and what was done, naming the
	// pair; for AbortNone why nothing is done.
	Message string
}

// DecideAbort is the runningPathHealthy rule for the migration in vmi's status.migrationState,
// at now, with the rule's mode for it (MigrationPolicy.ModeFor with MigrationCreator) and the
// paths' health. A migration is judged while it streams: started, not completed, failed, ended
// or already asked to abort, in mode PreCopy, Paused or not yet written. Post-copy is never
// judged (the guest already runs on the target: an abort would lose it). Paused is judged like
// pre-copy: KubeVirt suspended the guest on the source to help pre-copy converge, the source still
// holds the whole state, and KubeVirt's own monitor aborts a stuck Paused migration too.
//
// What counts is a failure between the migration's two nodes that began after the migration
// started: fresh at now, first found by a probe sent at or after the migration's startTimestamp
// (PeerPath.Since is when that probe was sent). startTimestamp has whole seconds, cut down: a probe
// sent in the second before the stream really began counts too — admission, which judged the
// migration seconds before, could not have known that failure either; and a failure whose first
// probe missed the stamp would never count for this migration (its since stays while it fails).
// The probe must come from an
// agent that had checked the pair before, within the silence bound (PeerPath.AfterCheck: an agent
// restarted without its previous verdict, or back from a gap, or a peer back from a long absence,
// would otherwise make an old failure look new).
// A failure known before the migration started is admission's business (rule pathHealthy): an
// admin who let the migration try a path the probes distrust (rule at warn, an exemption) is not
// overruled mid-stream. Every fault from source to target counts; from target to source,
// Unreachable and OneWay do (the stream's acknowledgements and the proxy's control connection
// cannot come back), an MTU fault does not (the bulk flows from source to target;
// acknowledgements are small frames). Missing, stale or unverified results have no fresh fault,
// so they decide nothing.
func DecideAbort(vmi *kubevirtv1.VirtualMachineInstance, h *PathHealth, mode settings.Mode, now time.Time) AbortDecision {
	if vmi == nil || vmi.Status.MigrationState == nil {
		return AbortDecision{Message: "no migration"}
	}
	ms := vmi.Status.MigrationState
	switch {
	case ms.Completed || ms.Failed || ms.EndTimestamp != nil:
		return AbortDecision{Message: "the migration ended"}
	case ms.StartTimestamp == nil:
		return AbortDecision{Message: "the migration has not started streaming"}
	case ms.AbortRequested:
		return AbortDecision{Message: "an abort was requested already"}
	case ms.Mode == kubevirtv1.MigrationPostCopy:
		return AbortDecision{Message: "the migration is in post-copy: an abort would lose the VM"}
	case ms.Mode != "" && ms.Mode != kubevirtv1.MigrationPreCopy && ms.Mode != kubevirtv1.MigrationPaused:
		return AbortDecision{Message: fmt.Sprintf("unknown migration mode %q: not judged", ms.Mode)}
	case ms.SourceNode == "" || ms.TargetNode == "" || ms.SourceNode == ms.TargetNode:
		return AbortDecision{Message: "the migration names no source and target node"}
	case mode == settings.ModeOff:
		return AbortDecision{Message: "rule " + string(settings.RuleRunningPathHealthy) + " is off for this migration"}
	}
	counted, before := brokenSince(h, ms.SourceNode, ms.TargetNode, ms.StartTimestamp.Time, now)
	if len(counted) == 0 {
		if before != nil {
			return AbortDecision{Message: fmt.Sprintf("the path between %s and %s was failing before the migration started (%s): "+
				"admission's rule %s judges a failure known before, not this rule", ms.SourceNode, ms.TargetNode, before.Message(), settings.RulePathHealthy)}
		}
		return AbortDecision{Message: "no failing path between " + ms.SourceNode + " and " + ms.TargetNode + " seen since the migration started"}
	}
	d := AbortDecision{Action: AbortWarn, Faults: counted}
	if mode == settings.ModeEnforce {
		d.Action = AbortDelete
	}
	d.Message = AbortMessage(ms.SourceNode, ms.TargetNode, counted, d.Action == AbortDelete)
	return d
}

// brokenSince returns the fresh faults between source and target that count for a migration
// that started streaming at start (see DecideAbort), source's direction first, and else the first
// of those that would count but for a failure known before start (nil when none).
func brokenSince(h *PathHealth, source, target string, start, now time.Time) (counted []PathFault, before *PathFault) {
	for _, f := range h.Faults(source, now) {
		forward := f.From == source && f.To == target
		reverse := f.From == target && f.To == source && f.Reason != v1beta1.PathMTU
		switch {
		case !forward && !reverse:
		case beganAfter(f, start):
			counted = append(counted, f)
		case before == nil:
			before = &f
		}
	}
	slices.SortStableFunc(counted, func(x, y PathFault) int { return boolCmp(x.From != source, y.From != source) })
	return counted, before
}

// beganAfter reports whether failure f began after start: a probe sent at or after start first
// found it, and the reporting agent had checked the pair the round before (PeerPath.AfterCheck):
// a failure found by an agent's first check of a peer (after a restart that did not resume its
// previous report, a gap in its rounds, or the peer's return) has no known beginning.
func beganAfter(f PathFault, start time.Time) bool {
	return f.AfterCheck && !f.Since.IsZero() && !f.Since.Before(start)
}

// AbortMessage is the one line of an abort (or, aborted false, of a warning) naming the pair and
// each failing direction.
func AbortMessage(source, target string, faults []PathFault, aborted bool) string {
	what := make([]string, len(faults))
	for i, f := range faults {
		what[i] = f.Message()
	}
	verb := "not aborted (rule " + string(settings.RuleRunningPathHealthy) + " is warn)"
	if aborted {
		verb = "aborted by migranet (rule " + string(settings.RuleRunningPathHealthy) + ")"
	}
	return fmt.Sprintf("migration path %s -> %s failed while the migration streamed: %s; %s",
		source, target, strings.Join(what, "; "), verb)
}
