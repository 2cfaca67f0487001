package settings

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

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
	// AbortedAnnotation is set on a VMIM just before migranet deletes it: the reason, in one line.
	// KubeVirt keeps the VMIM (its finalizer) until the abort completes, so it is readable meanwhile.
	AbortedAnnotation = "migranet.io/aborted"
)

// abortRoundSlack is added to a migration's start before a round counts: status.migrationState's
// startTimestamp has whole seconds, so a round that started within the second before it may
// have probed the pair before the stream began.
const abortRoundSlack = time.Second

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
// What counts is a fault between the migration's two nodes that is fresh at now and was found by
// a round that started at least a second after the migration's start (startTimestamp has whole
// seconds): a failure seen while the migration streams, never one from before it. Every fault from
// source to target counts; from target to source, Unreachable and OneWay do (the stream's
// acknowledgements and the proxy's control connection cannot come back), an MTU fault does not
// (the bulk flows from source to target; acknowledgements are small frames). Missing, stale or
// unverified results have no fresh fault, so they decide nothing.
func DecideAbort(vmi *kubevirtv1.VirtualMachineInstance, h *PathHealth, mode Mode, now time.Time) AbortDecision {
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
	case mode == ModeOff:
		return AbortDecision{Message: "rule " + string(RuleRunningPathHealthy) + " is off for this migration"}
	}
	counted := brokenSince(h, ms.SourceNode, ms.TargetNode, ms.StartTimestamp.Add(abortRoundSlack), now)
	if len(counted) == 0 {
		return AbortDecision{Message: "no failing path between " + ms.SourceNode + " and " + ms.TargetNode + " seen since the migration started"}
	}
	d := AbortDecision{Action: AbortWarn, Faults: counted}
	if mode == ModeEnforce {
		d.Action = AbortDelete
	}
	d.Message = AbortMessage(ms.SourceNode, ms.TargetNode, counted, d.Action == AbortDelete)
	return d
}

// brokenSince returns the fresh faults between source and target that count for a migration
// that started streaming at start (see DecideAbort), source's direction first.
func brokenSince(h *PathHealth, source, target string, start, now time.Time) []PathFault {
	var out []PathFault
	for _, f := range h.Faults(source, now) {
		forward := f.From == source && f.To == target
		reverse := f.From == target && f.To == source && f.Reason != v1beta1.PathMTU
		if (forward || reverse) && !f.Round.Before(start) {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(x, y PathFault) int { return boolCmp(x.From != source, y.From != source) })
	return out
}

// AbortMessage is the one line of an abort (or, aborted false, of a warning) naming the pair and
// each failing direction.
func AbortMessage(source, target string, faults []PathFault, aborted bool) string {
	what := make([]string, len(faults))
	for i, f := range faults {
		what[i] = f.Message()
	}
	verb := "not aborted (rule " + string(RuleRunningPathHealthy) + " is warn)"
	if aborted {
		verb = "aborted by migranet (rule " + string(RuleRunningPathHealthy) + ")"
	}
	return fmt.Sprintf("migration path %s -> %s failed while the migration streamed: %s; %s",
		source, target, strings.Join(what, "; "), verb)
}

// MigrationCreator is who created vmim, as far as the cluster records it: KubeVirt stores no
// creator, but marks the migrations its own virt-controller (service account kubevirt-controller
// in kubevirtNamespace) creates for a node drain (EvacuationMigrationAnnotation) and for a
// workload update (WorkloadUpdateMigrationAnnotation). Any other migration's creator is unknown
// (""), and no exemptUsers entry matches it. The runningPathHealthy rule's exemptUsers therefore
// apply to virt-controller's migrations only; see docs/settings-and-admission.md.
func MigrationCreator(vmim *kubevirtv1.VirtualMachineInstanceMigration, kubevirtNamespace string) string {
	if vmim == nil {
		return ""
	}
	_, evac := vmim.Annotations[kubevirtv1.EvacuationMigrationAnnotation]
	_, update := vmim.Annotations[kubevirtv1.WorkloadUpdateMigrationAnnotation]
	if evac || update {
		return serviceAccountPrefix + kubevirtNamespace + ":" + VirtControllerServiceAccount
	}
	return ""
}

// VirtControllerServiceAccount is the service account KubeVirt's virt-controller runs as.
const VirtControllerServiceAccount = "kubevirt-controller"
