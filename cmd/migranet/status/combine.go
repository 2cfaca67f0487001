package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/migranet/migranet/settings/health"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// States of the STATE column, before any ": reason".
const (
	StatePending         = "pending"
	StateScheduling      = "scheduling"
	StateScheduled       = "scheduled"
	StatePreparingTarget = "preparing target"
	StateTargetReady     = "target ready"
	StateWaitingForSync  = "waiting for sync"
	StateSynchronizing   = "synchronizing"
	StateMigrating       = "migrating"
	StatePostCopy        = "post-copy"
	StatePaused          = "paused"
	StateCompleting      = "completing"
	StateCompleted       = "completed"
	StateFailing         = "failing"
	StateFailed          = "failed"
	StateCancelling      = "cancelling"
	StateCancelled       = "cancelled"
	StateCancelFailed    = "cancel failed"
	StateVMIMissing      = "vmi missing"
	StateDeleted         = "deleted"
	StateUnknown         = "unknown"
)

// noReason is the reason of a failure KubeVirt gave no reason for.
const noReason = "no reason reported"

// Row is one migration as `migranet status` shows it. JSON names are part of the CLI's interface.
type Row struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	VMI           string `json:"vmi"`
	VMIFound      bool   `json:"vmiFound"`
	SourceNode    string `json:"sourceNode"`
	TargetNode    string `json:"targetNode"`
	Phase         string `json:"phase"`
	Mode          string `json:"mode"`
	Network       string `json:"network"`
	NetworkSource string `json:"networkSource"`
	TargetAddress string `json:"targetAddress"`
	// ConfiguredNAD is the migration network KubeVirt configured the migration with
	// (state.migrationConfiguration.network), "" for the pod network or when not reported.
	ConfiguredNAD  string `json:"configuredNAD"`
	configKnown    bool
	uid            types.UID    // ties events to this migration (AttachWarnings, AttachSteering)
	State          string       `json:"state"`
	Reason         string       `json:"reason"`
	InFlight       bool         `json:"inFlight"`
	Created        metav1.Time  `json:"created"`
	Started        *metav1.Time `json:"started"`
	Ended          *metav1.Time `json:"ended"`
	ElapsedSeconds *int64       `json:"elapsedSeconds"`
	// AdmissionWarnings are the warnings migranet admitted the migration with (AttachWarnings).
	AdmissionWarnings []string `json:"admissionWarnings,omitempty"`
	// Steering is what migranet's steering did to the migration's target pod (AttachSteering):
	// which nodes it excluded and why.
	Steering []string `json:"steering,omitempty"`
}

// Key identifies the row's VMIM: "namespace/name".
func (r Row) Key() string { return r.Namespace + "/" + r.Name }

// StateText is the STATE column: state, then ": reason" when there is one.
func (r Row) StateText() string {
	if r.Reason == "" {
		return r.State
	}
	return r.State + ": " + r.Reason
}

// Combine derives the row of vmim from its own status and from vmi's migration state (vmi nil:
// not found) at time now. It never panics; a nil vmim gives a row in state unknown.
func Combine(vmim *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance, now time.Time) Row {
	if vmim == nil {
		return Row{State: StateUnknown, Reason: "no migration"}
	}
	st := migrationState(vmim, vmi)
	r := Row{
		Namespace: vmim.Namespace,
		Name:      vmim.Name,
		VMI:       vmim.Spec.VMIName,
		VMIFound:  vmi != nil,
		Phase:     string(vmim.Status.Phase),
		InFlight:  !vmim.IsFinal(),
		Created:   vmim.CreationTimestamp,
		uid:       vmim.UID,
	}
	if st != nil {
		r.Mode, r.Network = string(st.Mode), string(st.MigrationNetworkType)
		if r.Network != "" {
			r.NetworkSource = NetworkReported
		}
		r.SourceNode, r.TargetNode = st.SourceNode, st.TargetNode
		if r.SourceNode == "" && st.SourceState != nil {
			r.SourceNode = st.SourceState.Node
		}
		if r.TargetNode == "" && st.TargetState != nil {
			r.TargetNode = st.TargetState.Node
		}
		r.Started, r.Ended = st.StartTimestamp, st.EndTimestamp
		r.TargetAddress = st.TargetNodeAddress
		if c := st.VMIMConfigurationOptions; c != nil {
			r.configKnown = true
			if c.Network != nil {
				r.ConfiguredNAD = *c.Network
			}
		}
		if r.TargetAddress == "" && st.TargetState != nil && st.TargetState.NodeAddress != nil {
			r.TargetAddress = *st.TargetState.NodeAddress
		}
	}
	if r.SourceNode == "" && vmi != nil && r.InFlight {
		r.SourceNode = vmi.Status.NodeName // no source named yet: the VMI still runs where it is
	}
	r.State, r.Reason = combinedState(vmim, vmi, st)
	r.ElapsedSeconds = elapsed(vmim, r.Started, r.Ended, now)
	return r
}

// migrationState picks the migration state describing vmim (see the package documentation).
func migrationState(vmim *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance) *kubevirtv1.VirtualMachineInstanceMigrationState {
	if vmi != nil {
		if st := vmi.Status.MigrationState; st != nil && vmim.UID != "" && st.MigrationUID == vmim.UID {
			return st
		}
	}
	if st := vmim.Status.MigrationState; st != nil && (st.MigrationUID == "" || st.MigrationUID == vmim.UID) {
		return st
	}
	return nil
}

func combinedState(vmim *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance, st *kubevirtv1.VirtualMachineInstanceMigrationState) (string, string) {
	var s kubevirtv1.VirtualMachineInstanceMigrationState
	if st != nil {
		s = *st
	}
	abortCond := conditionTrue(vmim, kubevirtv1.VirtualMachineInstanceMigrationAbortRequested)
	switch vmim.Status.Phase {
	case kubevirtv1.MigrationSucceeded:
		return StateCompleted, ""
	case kubevirtv1.MigrationFailed:
		if s.AbortStatus == kubevirtv1.MigrationAbortSucceeded ||
			(s.AbortStatus != kubevirtv1.MigrationAbortFailed && (s.AbortRequested || abortCond)) {
			return StateCancelled, abortedBy(vmim, "")
		}
		return StateFailed, failureReason(vmim, s)
	}
	switch {
	case vmim.DeletionTimestamp != nil:
		return StateCancelling, abortedBy(vmim, "migration deleted")
	case vmi == nil:
		return StateVMIMissing, fmt.Sprintf("VirtualMachineInstance %s not found", vmim.Spec.VMIName)
	case s.AbortStatus == kubevirtv1.MigrationAbortSucceeded:
		return StateCancelled, ""
	case s.AbortStatus == kubevirtv1.MigrationAbortFailed:
		return StateCancelFailed, "still " + runningState(s.Mode)
	case s.AbortRequested || s.AbortStatus == kubevirtv1.MigrationAbortInProgress || abortCond:
		return StateCancelling, ""
	case s.Failed:
		return StateFailing, orNoReason(s.FailureReason)
	}
	targetReady := s.TargetNodeDomainReadyTimestamp != nil || (s.TargetState != nil && s.TargetState.DomainReadyTimestamp != nil)
	switch {
	case s.Completed && targetReady:
		return StateCompleting, ""
	case s.Completed:
		return StateCompleting, "waiting for the target"
	case targetReady && s.Mode != kubevirtv1.MigrationPostCopy:
		return StateCompleting, "waiting for the source"
	case vmim.Status.Phase == kubevirtv1.MigrationRunning || s.StartTimestamp != nil:
		return runningState(s.Mode), ""
	}
	if state, ok := phaseStates[vmim.Status.Phase]; ok {
		return state, blockingReason(vmim)
	}
	return StateUnknown, "phase " + string(vmim.Status.Phase)
}

// abortedBy is the reason of a migration migranet aborted (health.AbortedBy: the annotation set
// once its delete succeeded), else otherwise.
func abortedBy(vmim *kubevirtv1.VirtualMachineInstanceMigration, otherwise string) string {
	if why := health.AbortedBy(vmim); why != "" {
		return "aborted by migranet: " + oneLine(why)
	}
	return otherwise
}

// phaseStates names the phases before the migration itself runs.
var phaseStates = map[kubevirtv1.VirtualMachineInstanceMigrationPhase]string{
	kubevirtv1.MigrationPhaseUnset:      StatePending,
	kubevirtv1.MigrationPending:         StatePending,
	kubevirtv1.MigrationScheduling:      StateScheduling,
	kubevirtv1.MigrationScheduled:       StateScheduled,
	kubevirtv1.MigrationPreparingTarget: StatePreparingTarget,
	kubevirtv1.MigrationTargetReady:     StateTargetReady,
	kubevirtv1.MigrationWaitingForSync:  StateWaitingForSync,
	kubevirtv1.MigrationSynchronizing:   StateSynchronizing,
}

func runningState(mode kubevirtv1.MigrationMode) string {
	switch mode {
	case kubevirtv1.MigrationPostCopy:
		return StatePostCopy
	case kubevirtv1.MigrationPaused:
		return StatePaused
	default:
		return StateMigrating
	}
}

// failureReason is why a Failed VMIM failed: the migration state's reason, else a True
// condition's message.
func failureReason(vmim *kubevirtv1.VirtualMachineInstanceMigration, s kubevirtv1.VirtualMachineInstanceMigrationState) string {
	if s.FailureReason != "" {
		return oneLine(s.FailureReason)
	}
	return orNoReason(blockingReason(vmim))
}

// blockingReason is the message (else reason, else type) of the first True VMIM condition other
// than an abort request, e.g. migrationRejectedByResourceQuota.
func blockingReason(vmim *kubevirtv1.VirtualMachineInstanceMigration) string {
	for _, c := range vmim.Status.Conditions {
		if c.Status != corev1.ConditionTrue || c.Type == kubevirtv1.VirtualMachineInstanceMigrationAbortRequested {
			continue
		}
		switch {
		case c.Message != "":
			return oneLine(c.Message)
		case c.Reason != "":
			return oneLine(c.Reason)
		default:
			return string(c.Type)
		}
	}
	return ""
}

func conditionTrue(vmim *kubevirtv1.VirtualMachineInstanceMigration, t kubevirtv1.VirtualMachineInstanceMigrationConditionType) bool {
	for _, c := range vmim.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orNoReason(s string) string {
	if s == "" {
		return noReason
	}
	return oneLine(s)
}

// oneLine keeps a reason on one table line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// elapsed is the migration's duration in whole seconds (see the package documentation), nil when
// unknown.
func elapsed(vmim *kubevirtv1.VirtualMachineInstanceMigration, started, ended *metav1.Time, now time.Time) *int64 {
	from := vmim.CreationTimestamp.Time
	if started != nil && !started.IsZero() {
		from = started.Time
	}
	to := now
	switch {
	case ended != nil && !ended.IsZero():
		to = ended.Time
	case vmim.IsFinal():
		t := phaseTime(vmim, vmim.Status.Phase)
		if t.IsZero() {
			return nil
		}
		to = t
	}
	if from.IsZero() {
		return nil
	}
	secs := int64(to.Sub(from) / time.Second)
	if secs < 0 {
		secs = 0
	}
	return &secs
}

// phaseTime is when vmim last entered phase, zero when not recorded.
func phaseTime(vmim *kubevirtv1.VirtualMachineInstanceMigration, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) time.Time {
	var t time.Time
	for _, p := range vmim.Status.PhaseTransitionTimestamps {
		if p.Phase == phase && p.PhaseTransitionTimestamp.After(t) {
			t = p.PhaseTransitionTimestamp.Time
		}
	}
	return t
}
