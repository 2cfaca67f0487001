package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// combineCase is one combined state: the objects, the STATE column it must give (checked apart from
// the golden file, so a carelessly updated golden file cannot hide a wrong state) and its golden
// file testdata/combine-<name>.golden (table and JSON).
type combineCase struct {
	name    string
	vmim    *kubevirtv1.VirtualMachineInstanceMigration
	vmi     *kubevirtv1.VirtualMachineInstance
	state   string
	nodes   string // NODES column when not ""
	elapsed string // ELAPSED column when not ""
}

func combineCases() []combineCase {
	const (
		running   = kubevirtv1.MigrationRunning
		succeeded = kubevirtv1.MigrationSucceeded
		failed    = kubevirtv1.MigrationFailed
	)
	quota := condition(kubevirtv1.VirtualMachineInstanceMigrationRejectedByResourceQuota, "QuotaExceeded",
		"target pod exceeds\n quota compute-resources")
	completed := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.Completed, s.EndTimestamp, s.Mode = true, ago(time.Minute), kubevirtv1.MigrationPreCopy
	}
	targetReady := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.TargetNodeDomainDetected, s.TargetNodeDomainReadyTimestamp = true, ago(50*time.Second)
	}
	failedState := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.Failed, s.EndTimestamp, s.FailureReason = true, ago(2*time.Minute), "Live migration failed: connection to node-2:49152 refused"
	}
	abort := func(st kubevirtv1.MigrationAbortStatus) stateOpt {
		return func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.AbortRequested, s.AbortStatus = true, st }
	}
	otherUID := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.MigrationUID = "99999999-0000-0000-0000-000000000000"
	}
	decentralized := func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
		s.SourceNode, s.TargetNode = "", ""
		s.SourceState = &kubevirtv1.VirtualMachineInstanceMigrationSourceState{}
		s.SourceState.Node = "east-1"
		s.TargetState = &kubevirtv1.VirtualMachineInstanceMigrationTargetState{}
		s.TargetState.Node = "west-4"
	}
	return []combineCase{
		{name: "pending-unset", vmim: newVMIM(), vmi: newVMI(), state: "pending", nodes: "node-1 → ?", elapsed: "5m"},
		{name: "pending-quota", vmim: newVMIM(phase(kubevirtv1.MigrationPending), quota), vmi: newVMI(),
			state: "pending: target pod exceeds quota compute-resources"},
		{name: "scheduling", vmim: newVMIM(phase(kubevirtv1.MigrationScheduling)), vmi: newVMI(), state: "scheduling"},
		{name: "scheduled", vmim: newVMIM(phase(kubevirtv1.MigrationScheduled)), vmi: newVMI(vmiState(notStarted())), state: "scheduled",
			nodes: "node-1 → node-2"},
		{name: "preparing-target", vmim: newVMIM(phase(kubevirtv1.MigrationPreparingTarget)), vmi: newVMI(vmiState(notStarted())),
			state: "preparing target"},
		{name: "preparing-target-no-source", vmim: newVMIM(phase(kubevirtv1.MigrationPreparingTarget)),
			vmi: newVMI(vmiState(notStarted(), func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
				s.SourceNode, s.MigrationNetworkType, s.TargetNodeAddress = "", "", ""
			})), state: "preparing target", nodes: "node-1 → node-2"},
		{name: "target-ready", vmim: newVMIM(phase(kubevirtv1.MigrationTargetReady)), vmi: newVMI(vmiState(notStarted())), state: "target ready"},
		{name: "started-before-running", vmim: newVMIM(phase(kubevirtv1.MigrationTargetReady)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPreCopy))),
			state: "migrating"},
		{name: "migrating", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPreCopy))), state: "migrating", elapsed: "3m12s"},
		{name: "migrating-pod-network", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
			s.MigrationNetworkType = kubevirtv1.Pod
		})), state: "migrating"},
		{name: "post-copy", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPostCopy))), state: "post-copy"},
		{name: "post-copy-target-running", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPostCopy), targetReady)),
			state: "post-copy"},
		{name: "paused", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPaused))), state: "paused"},
		{name: "completing-source-done", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(completed)),
			state: "completing: waiting for the target", elapsed: "2m12s"},
		{name: "completing-target-done", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPreCopy), targetReady)),
			state: "completing: waiting for the source"},
		{name: "completing", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(completed, targetReady)), state: "completing"},
		{name: "completed", vmim: newVMIM(phase(succeeded), transition(succeeded, ago(40*time.Second))),
			vmi:   newVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = "node-2" }, vmiState(completed, targetReady)),
			state: "completed", nodes: "node-1 → node-2", elapsed: "2m12s"},
		{name: "completed-history", vmim: newVMIM(phase(succeeded), vmimState(completed, func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
			s.SourceNode, s.TargetNode = "node-3", "node-1"
		})), vmi: newVMI(vmiState(otherUID, mode(kubevirtv1.MigrationPostCopy))), state: "completed", nodes: "node-3 → node-1"},
		{name: "completed-on-migration-network", vmim: newVMIM(phase(succeeded)), vmi: newVMI(vmiState(completed, targetReady, func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
			nad := "vm-migration-network-d37a915f82"
			s.VMIMConfigurationOptions = &kubevirtv1.VMIMConfigurationOptions{Network: &nad}
		})), state: "completed"},
		{name: "completed-without-state", vmim: newVMIM(phase(succeeded), transition(succeeded, ago(4*time.Minute))), vmi: newVMI(),
			state: "completed", nodes: "<none>", elapsed: "60s"},
		{name: "completed-without-times", vmim: newVMIM(phase(succeeded)), vmi: newVMI(), state: "completed", elapsed: "<unknown>"},
		{name: "completed-vmi-gone", vmim: newVMIM(phase(succeeded), vmimState(completed)), vmi: nil, state: "completed"},
		{name: "failing", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(failedState)),
			state: "failing: Live migration failed: connection to node-2:49152 refused", elapsed: "72s"},
		{name: "failing-no-reason", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.Failed = true })),
			state: "failing: no reason reported"},
		{name: "failed", vmim: newVMIM(phase(failed)), vmi: newVMI(vmiState(failedState)),
			state: "failed: Live migration failed: connection to node-2:49152 refused"},
		{name: "failed-condition", vmim: newVMIM(phase(failed), quota, transition(failed, ago(4*time.Minute))), vmi: newVMI(),
			state: "failed: target pod exceeds quota compute-resources", elapsed: "60s"},
		{name: "failed-no-reason", vmim: newVMIM(phase(failed), transition(failed, ago(time.Minute))), vmi: newVMI(), state: "failed: no reason reported"},
		{name: "cancelling", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPreCopy), abort(""))), state: "cancelling"},
		{name: "cancelling-aborting", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(abort(kubevirtv1.MigrationAbortInProgress))), state: "cancelling"},
		{name: "cancelling-condition", vmim: newVMIM(phase(running), condition(kubevirtv1.VirtualMachineInstanceMigrationAbortRequested, "", "")),
			vmi: newVMI(vmiState()), state: "cancelling"},
		{name: "cancelling-deleted", vmim: newVMIM(phase(kubevirtv1.MigrationScheduling), deleting()), vmi: newVMI(), state: "cancelling: migration deleted"},
		{name: "cancelled-interim", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(abort(kubevirtv1.MigrationAbortSucceeded))), state: "cancelled"},
		{name: "cancelled", vmim: newVMIM(phase(failed)), vmi: newVMI(vmiState(abort(kubevirtv1.MigrationAbortSucceeded), failedState)), state: "cancelled"},
		{name: "cancel-failed", vmim: newVMIM(phase(running)), vmi: newVMI(vmiState(mode(kubevirtv1.MigrationPostCopy), abort(kubevirtv1.MigrationAbortFailed))),
			state: "cancel failed: still post-copy"},
		{name: "vmi-missing", vmim: newVMIM(phase(kubevirtv1.MigrationPending)), vmi: nil, state: "vmi missing: VirtualMachineInstance vm1 not found",
			nodes: "<none>"},
		{name: "other-migration-on-vmi", vmim: newVMIM(phase(kubevirtv1.MigrationScheduling)), vmi: newVMI(vmiState(otherUID, mode(kubevirtv1.MigrationPostCopy))),
			state: "scheduling", nodes: "node-1 → ?"},
		{name: "waiting-for-sync", vmim: newVMIM(phase(kubevirtv1.MigrationWaitingForSync)), vmi: newVMI(), state: "waiting for sync"},
		{name: "synchronizing", vmim: newVMIM(phase(kubevirtv1.MigrationSynchronizing)), vmi: newVMI(vmiState(notStarted(), decentralized)),
			state: "synchronizing", nodes: "east-1 → west-4"},
		{name: "unknown-phase", vmim: newVMIM(phase("Teleporting")), vmi: newVMI(), state: "unknown: phase Teleporting"},
		{name: "no-migration", vmim: nil, vmi: newVMI(), state: "unknown: no migration", nodes: "<none>", elapsed: "<unknown>"},
	}
}

func TestCombine(t *testing.T) {
	cases := combineCases()
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if seen[tc.name] {
				t.Fatalf("two cases named %q", tc.name)
			}
			seen[tc.name] = true
			r := Combine(tc.vmim, tc.vmi, now)
			if got := r.StateText(); got != tc.state {
				t.Errorf("STATE %q, want %q", got, tc.state)
			}
			cells := r.Cells(false)
			if tc.nodes != "" && cells[2] != tc.nodes {
				t.Errorf("NODES %q, want %q", cells[2], tc.nodes)
			}
			if tc.elapsed != "" && cells[6] != tc.elapsed {
				t.Errorf("ELAPSED %q, want %q", cells[6], tc.elapsed)
			}
			if tc.vmim != nil && r.InFlight == tc.vmim.IsFinal() {
				t.Errorf("inFlight %v for phase %q", r.InFlight, tc.vmim.Status.Phase)
			}
			golden(t, "combine-"+tc.name, renderRow(t, r))
		})
	}
	// Every golden file belongs to a case: a case removed takes its file with it.
	for name := range goldenNames(t, "combine-") {
		if !seen[strings.TrimPrefix(name, "combine-")] {
			t.Errorf("testdata/%s.golden has no case", name)
		}
	}
}

// renderRow is a case's golden content: the table (titles and row) and the row as JSON.
func renderRow(t *testing.T, r Row) string {
	t.Helper()
	var b strings.Builder
	var tbl table
	lines := [][]string{Columns(false), r.Cells(false)}
	tbl.widen(lines...)
	for _, l := range lines {
		b.WriteString(tbl.line(l))
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b.Write(raw)
	b.WriteString("\n")
	return b.String()
}

// TestCombineEveryState checks the cases cover every state Combine can give.
func TestCombineEveryState(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range combineCases() {
		covered[Combine(tc.vmim, tc.vmi, now).State] = true
	}
	for _, s := range []string{StatePending, StateScheduling, StateScheduled, StatePreparingTarget, StateTargetReady,
		StateWaitingForSync, StateSynchronizing, StateMigrating, StatePostCopy, StatePaused, StateCompleting, StateCompleted,
		StateFailing, StateFailed, StateCancelling, StateCancelled, StateCancelFailed, StateVMIMissing, StateUnknown} {
		if !covered[s] {
			t.Errorf("no case gives state %q", s)
		}
	}
}

// TestCombineDoesNotMutate checks Combine leaves its inputs alone (they come from a shared cache).
func TestCombineDoesNotMutate(t *testing.T) {
	for _, tc := range combineCases() {
		if tc.vmim == nil || tc.vmi == nil {
			continue
		}
		before, _ := json.Marshal([]any{tc.vmim, tc.vmi})
		Combine(tc.vmim, tc.vmi, now)
		after, _ := json.Marshal([]any{tc.vmim, tc.vmi})
		if string(before) != string(after) {
			t.Errorf("%s: Combine changed its inputs", tc.name)
		}
	}
}

// TestCombineZeroValues feeds empty and partial objects: no panic, a state always.
func TestCombineZeroValues(t *testing.T) {
	inputs := []struct {
		vmim *kubevirtv1.VirtualMachineInstanceMigration
		vmi  *kubevirtv1.VirtualMachineInstance
	}{
		{nil, nil},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, nil},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &kubevirtv1.VirtualMachineInstance{}},
		{&kubevirtv1.VirtualMachineInstanceMigration{Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{}, Phase: kubevirtv1.MigrationFailed}}, nil},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Completed: true}}}},
	}
	for i, in := range inputs {
		r := Combine(in.vmim, in.vmi, now)
		if r.State == "" {
			t.Errorf("input %d: empty state", i)
		}
		if len(r.Cells(true)) != len(Columns(true)) {
			t.Errorf("input %d: %d cells for %d columns", i, len(r.Cells(true)), len(Columns(true)))
		}
	}
}
