package migrationcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Field paths the decisions name.
const (
	fieldVMIName           = "spec.vmiName"
	fieldAddedNodeSelector = "spec.addedNodeSelector"
	fieldForceCancel       = "metadata.annotations[" + settings.ForceCancelAnnotation + "]"
)

// retryNetwork ends every networkReady message.
const retryNetwork = "retry when the setting " + v1beta1.MigrationNetwork + " is Ready"

// Decision is one violated migration admission rule.
type Decision struct {
	// Rule is the violated rule.
	Rule settings.Rule
	// Deny is set when the rule is enforced: the request is refused.
	Deny bool
	// Warn is set when the rule is in warn mode: the request is admitted with Message as a warning.
	Warn bool
	// Field is the path, in the request's object, the message is about; "" when the cause is the
	// cluster's state rather than a field of the request.
	Field string
	// Message says what is wrong and what to do.
	Message string
}

// decision builds the Decision for a violated rule in mode m (never ModeOff).
func decision(r settings.Rule, m settings.Mode, fld, msg string) Decision {
	return Decision{Rule: r, Deny: m == settings.ModeEnforce, Warn: m == settings.ModeWarn, Field: fld, Message: msg}
}

// CreateInput is everything the VMIM create rules look at, read from informer caches by the caller.
type CreateInput struct {
	VMIM *kubevirtv1.VirtualMachineInstanceMigration
	// VMI is the VMIM's spec.vmiName in its namespace; nil if not found.
	VMI *kubevirtv1.VirtualMachineInstance
	// OtherMigrations are other VMIMs for the same VMI (same namespace, spec.vmiName).
	OtherMigrations []*kubevirtv1.VirtualMachineInstanceMigration
	// KubeVirt is the KubeVirt CR; nil if none.
	KubeVirt *kubevirtv1.KubeVirt
	// Network is the network controller's latest snapshot; nil before its first observation.
	Network *health.Snapshot
	// CurrentHash is the hash of vm-migration-network's current effective value, "" when the
	// migration network is disabled; a snapshot with another hash is older than the setting.
	CurrentHash string
	Nodes       []*corev1.Node
	// Policy is the migration-policy setting; nil means the default (all enforced).
	Policy *settings.MigrationPolicy
	// Pods gives the VMI's pods and each node's usage; nil when unknown (room on the nodes and
	// KubeVirt's anti-affinity to the VMI's other pods are then not judged).
	Pods PodView
	// User is the admission request's username.
	User string
	// Paths is the probe agents' path health of the network in force; nil when none is known
	// (rule pathHealthy then has nothing to say). Now is the time its results are judged at (the
	// zero time: when judged).
	Paths *health.PathHealth
	Now   time.Time
	// Traffic is the migrations streaming into and out of each node, counted only when the policy
	// has a budget (nil: not counted; no node is preferred against by it, no slot judged).
	Traffic *Traffic
	// Reserved are the migrations other admissions let in whose VMIMs the caches may not show yet
	// (the inbound slot reservations, webhook/slots); those the traffic counts are not counted twice.
	Reserved []types.UID
	// index, when set, is the index of Nodes: a feasible target is then found without walking them.
	index *nodeIndex
	// feas is the target search, run once per evaluation for feasibleTarget and pathHealthy.
	feas feasibility
}

// EvaluateCreate judges a VMIM create against every create rule of the registry
// (settings.RulesOn(settings.OnCreate)), in its order, and returns one Decision per violated rule
// whose mode for in.User is not off. A nil VMIM yields no decision.
func EvaluateCreate(in CreateInput) []Decision {
	if in.VMIM == nil {
		return nil
	}
	in.feas = feasibility{} // searched afresh for this evaluation
	var out []Decision
	for _, r := range settings.RulesOn(settings.OnCreate) {
		m := in.Policy.ModeFor(r, in.User)
		if m == settings.ModeOff {
			continue
		}
		if f, _ := checkCreate(r, &in); f.message != "" {
			d := decision(r, m, f.field, f.message)
			if f.warnOnly {
				d.Deny, d.Warn = false, true
			}
			out = append(out, d)
		}
	}
	return out
}

// finding is what one rule's check found: nothing (message ""), a violation, or a note that is
// only ever a warning.
type finding struct {
	field, message string
	warnOnly       bool
}

// checkCreate runs rule r's check of a VMIM create, called directly (a call through a function
// value would move the input to the heap on every review). Every create rule of the registry has
// a check (TestEveryCreateRuleHasACheck); ok is false for a rule without one.
func checkCreate(r settings.Rule, in *CreateInput) (f finding, ok bool) {
	switch r {
	case settings.RuleKubeVirtReady:
		return checkKubeVirtReady(in), true
	case settings.RuleNetworkReady:
		return checkNetworkReady(in), true
	case settings.RuleFeasibleTarget:
		return checkFeasibleTarget(in), true
	case settings.RulePathHealthy:
		return checkPathHealthy(in), true
	case settings.RuleInboundSlot:
		return checkInboundSlot(in), true
	case settings.RuleVMIState:
		return checkVMIState(in), true
	}
	return finding{}, false
}

func checkKubeVirtReady(in *CreateInput) finding {
	if ok, why := settings.KubeVirtReady(in.KubeVirt); !ok {
		return finding{message: "cannot migrate now: " + why + "; retry when KubeVirt is ready (Available=True with reason " + settings.KubeVirtReadyReason + ")"}
	}
	return finding{}
}

// checkNetworkReady: the source's own missing cluster network says more than the count of
// attached nodes (the network controller counts it as not attached, reason NoClusterNetwork).
func checkNetworkReady(in *CreateInput) finding {
	msg := sourceOffNetwork(in)
	if msg == "" {
		msg = networkNotReady(in.Network, in.CurrentHash)
	}
	if msg == "" {
		msg = sourceNotAttached(in)
	}
	return finding{message: msg}
}

// checkFeasibleTarget is judged only when the VMI exists (vmiState speaks otherwise). A target
// found without judging everything the scheduler will is admitted with a warning, never refused.
func checkFeasibleTarget(in *CreateInput) finding {
	if in.VMI == nil {
		return finding{}
	}
	f := in.feasible()
	if f.msg != "" {
		return finding{field: f.fld, message: f.msg}
	}
	if len(f.notEvaluated) > 0 {
		return finding{field: fieldVMIName, warnOnly: true,
			message: "admitted without evaluating " + strings.Join(f.notEvaluated, ", ") + " of the target pod; if it stays Pending, kubectl describe pod -l kubevirt.io/migrationJobUID=<uid> says why"}
	}
	return finding{}
}

func checkVMIState(in *CreateInput) finding {
	return finding{field: fieldVMIName, message: vmiStateProblem(in)}
}

// networkNotReady explains why a configured migration network is not Ready, or returns "".
// KubeVirt's own readiness is rule kubevirtReady's business: a snapshot that is not Ready only
// because of KubeVirt passes here. Nor does one that is not Ready only because some nodes are not
// attached: each migration is then judged on its own nodes (sourceNotAttached, and the targets'
// stageNotAttached), so a node added without the network does not stop maintenance elsewhere.
func networkNotReady(snap *health.Snapshot, current string) string {
	switch {
	case current == "":
		return ""
	case snap == nil:
		return "the migration network's rollout has not been observed yet (the network controller has published no status); " + retryNetwork
	case snap.Hash != current:
		return fmt.Sprintf("the migration network's rollout for the current value of the setting %s (hash %s) has not been observed yet (last observed %s); %s",
			v1beta1.MigrationNetwork, shortHash(current), shortHash(snap.Hash), retryNetwork)
	case snap.AppliedHash != current:
		return fmt.Sprintf("%d of %d virt-handlers are on the migration network; %s (the settings controller has not applied the current value yet)",
			snap.Attached, snap.Eligible, retryNetwork)
	case !snap.Ready && snap.Reason != health.ReasonKubeVirtNotReady && snap.Reason != health.ReasonNodesNotAttached:
		return fmt.Sprintf("%d of %d virt-handlers are on the migration network %s; %s (%s: %s)",
			snap.Attached, snap.Eligible, snap.Network, retryNetwork, snap.Reason, snap.Message)
	}
	return ""
}

func shortHash(h string) string {
	if h == "" {
		return "none"
	}
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// vmiStateProblem explains why the VMI cannot start a migration (missing, or one in flight), or
// returns "".
func vmiStateProblem(in *CreateInput) string {
	vmim := in.VMIM
	name := vmim.Spec.VMIName
	if name == "" {
		return "spec.vmiName is empty: name the VirtualMachineInstance to migrate"
	}
	if in.VMI == nil {
		return fmt.Sprintf("VirtualMachineInstance %s/%s not found: create the VMI first or fix spec.vmiName", vmim.Namespace, name)
	}
	var first *kubevirtv1.VirtualMachineInstanceMigration
	n := 0
	for _, o := range in.OtherMigrations {
		if o == nil || o.Namespace != vmim.Namespace || o.Spec.VMIName != name || o.IsFinal() || sameObject(o, vmim) {
			continue
		}
		n++
		if first == nil || o.Name < first.Name {
			first = o
		}
	}
	if first == nil {
		return ""
	}
	phase := string(first.Status.Phase)
	if phase == "" {
		phase = string(kubevirtv1.MigrationPending)
	}
	msg := fmt.Sprintf("VirtualMachineInstance %s/%s already has a migration in flight: VirtualMachineInstanceMigration %s is %s",
		vmim.Namespace, name, first.Name, phase)
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more)", n-1)
	}
	return msg + "; wait until it has Succeeded or Failed, or cancel it by deleting it"
}

// sameObject reports whether a and b are the same VMIM: the same name in the same namespace. A
// create whose name is taken is the API server's to answer (409 AlreadyExists), not a second
// migration in flight; UIDs cannot tell, as the API server gives the new object its own before
// validating admission runs.
func sameObject(a, b *kubevirtv1.VirtualMachineInstanceMigration) bool {
	return a.Name != "" && a.Name == b.Name && a.Namespace == b.Namespace
}

// DeleteInput is everything the VMIM delete (cancel) rule looks at.
type DeleteInput struct {
	VMIM *kubevirtv1.VirtualMachineInstanceMigration
	// VMI is the VMIM's spec.vmiName in its namespace; nil if not found.
	VMI *kubevirtv1.VirtualMachineInstance
	// Policy is the migration-policy setting; nil means the default.
	Policy *settings.MigrationPolicy
}

// EvaluateDelete judges a VMIM delete against rule postCopyCancel, which no user is exempt from:
// while the VMI's migration is in post-copy and neither completed nor failed, cancelling it cannot
// bring the VM back, so the delete is refused unless the VMIM carries settings.ForceCancelAnnotation "true".
// Only the migration the VMI's migrationState names is protected (any VMIM when it names none);
// deleting a finished or unrelated VMIM passes.
func EvaluateDelete(in DeleteInput) []Decision {
	vmim, vmi := in.VMIM, in.VMI
	if vmim == nil || vmi == nil || vmi.Namespace != vmim.Namespace || vmi.Name != vmim.Spec.VMIName {
		return nil
	}
	m := in.Policy.Mode(settings.RulePostCopyCancel)
	ms := vmi.Status.MigrationState
	if m == settings.ModeOff || ms == nil || ms.Mode != kubevirtv1.MigrationPostCopy || ms.Completed || ms.Failed || vmim.IsFinal() {
		return nil
	}
	if ms.MigrationUID != "" && ms.MigrationUID != vmim.UID {
		return nil
	}
	force, set := vmim.Annotations[settings.ForceCancelAnnotation]
	if force == "true" {
		return nil
	}
	msg := fmt.Sprintf("VirtualMachineInstanceMigration %s/%s is in post-copy: VirtualMachineInstance %s already runs on the target node %s "+
		"while part of its memory is still on the source node %s, so aborting now cannot return it to the source and loses the VM; "+
		"wait for the migration to complete. To cancel anyway and accept losing the VM, run "+
		"kubectl annotate vmim %s -n %s %s=true, then delete it again",
		vmim.Namespace, vmim.Name, vmi.Name, orUnknown(ms.TargetNode), orUnknown(ms.SourceNode), vmim.Name, vmim.Namespace, settings.ForceCancelAnnotation)
	if set {
		msg += fmt.Sprintf(" (the annotation is %q; only \"true\" forces the cancel)", force)
	}
	return []Decision{decision(settings.RulePostCopyCancel, m, fieldForceCancel, msg)}
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// formatSelector renders a node selector as {k1: v1, k2: v2}, keys sorted.
func formatSelector(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + ": " + sel[k])
	}
	b.WriteByte('}')
	return b.String()
}

func nodeReady(n *corev1.Node) bool {
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// label is one key and value of a node selector.
type label struct{ key, value string }

// flatten lists sel's labels.
func flatten(sel map[string]string) []label {
	if len(sel) == 0 {
		return nil
	}
	out := make([]label, 0, len(sel))
	for k, v := range sel {
		out = append(out, label{k, v})
	}
	return out
}

// hasLabels reports whether labels carries every label of sel with the same value.
func hasLabels(labels map[string]string, sel []label) bool {
	for i := range sel {
		if got, ok := labels[sel[i].key]; !ok || got != sel[i].value {
			return false
		}
	}
	return true
}

// eligible is settings.Eligible over a flattened selector: not a witness node, and every label of
// the KubeVirt CR's workloads node selector.
func eligible(n *corev1.Node, kvLabels []label) bool {
	if _, witness := n.Labels[settings.WitnessLabel]; witness {
		return false
	}
	return hasLabels(n.Labels, kvLabels)
}

// selectorConflict names every key the VMI's nodeSelector and the VMIM's addedNodeSelector set to
// different values, or returns "".
func selectorConflict(vmi *kubevirtv1.VirtualMachineInstance, vmiSel, addedSel map[string]string) string {
	var keys []string
	for k, v := range addedSel {
		if w, ok := vmiSel[k]; ok && w != v {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("key %q is %q in the VMI's nodeSelector but %q in spec.addedNodeSelector", k, vmiSel[k], addedSel[k])
	}
	return fmt.Sprintf("spec.addedNodeSelector conflicts with the nodeSelector of VirtualMachineInstance %s/%s: %s, so no node can match both; "+
		"drop the key from spec.addedNodeSelector or give it the VMI's value", vmi.Namespace, vmi.Name, strings.Join(parts, "; "))
}
