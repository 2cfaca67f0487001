package settings

import "strings"

// Rule names one migration admission rule of the migration-policy setting.
type Rule string

// The migration admission rules; registry holds what each one is.
const (
	RuleKubeVirtReady  Rule = "kubevirtReady"
	RuleNetworkReady   Rule = "networkReady"
	RuleFeasibleTarget Rule = "feasibleTarget"
	RulePathHealthy    Rule = "pathHealthy"
	RuleVMIState       Rule = "vmiState"
	// RuleInboundSlot: with a migration budget, some node that can take the target pod has an
	// inbound slot free.
	RuleInboundSlot    Rule = "inboundSlot"
	RulePostCopyCancel Rule = "postCopyCancel"
	RuleHCONetwork     Rule = "hcoNetwork"
	// RuleRunningPathHealthy judges a migration already streaming: its path must not fail.
	RuleRunningPathHealthy Rule = "runningPathHealthy"
)

// Request is the VMIM request a rule judges.
type Request string

// The requests the rules judge.
const (
	// OnCreate: starting a migration (VMIM create).
	OnCreate Request = "create"
	// OnCancel: cancelling a migration (VMIM delete).
	OnCancel Request = "cancel"
	// OnHyperConverged: choosing the migration network on HCO's HyperConverged CR (create or
	// update of its liveMigrationConfig.network).
	OnHyperConverged Request = "HyperConverged network"
	// OnRunning: a migration already streaming (no request: the path-abort controller judges it
	// whenever the probe results or the migration change).
	OnRunning Request = "running"
)

// RuleSpec is one entry of the rule registry: everything about a rule but its check, which the
// admission engine (webhook/migrationcheck) keeps under the same name. The policy parser, the
// admission metrics' label values, `migranet preflight` and the rule table in docs/ all derive
// from the registry, so adding a rule is one entry here, its check there, and their tests.
type RuleSpec struct {
	Rule Rule
	// Default is the rule's mode when the migration-policy does not name it.
	Default Mode
	// Exemptable: the users in exemptUsers skip the rule. Rules that judge the cluster are (an
	// evacuation controller must move VMs whatever the cluster's state); rules that protect the
	// VM itself are not.
	Exemptable bool
	// On is the request the rule judges.
	On Request
	// Checks says, in one sentence, what must hold for the request to pass.
	Checks string
}

// registry lists every rule, in the order the admission webhook evaluates them. Read-only.
var registry = [...]RuleSpec{
	{RuleKubeVirtReady, ModeEnforce, true, OnCreate,
		"the KubeVirt CR is Available with reason " + KubeVirtReadyReason},
	{RuleNetworkReady, ModeEnforce, true, OnCreate,
		"a configured migration network is applied and observed, and the source node's virt-handler is on it (nodes not on it are only dropped from the targets)"},
	{RuleFeasibleTarget, ModeEnforce, true, OnCreate,
		"some node other than the VMI's own can take its target pod as the scheduler judges it, carries the cluster network and has its virt-handler on the migration network"},
	{RulePathHealthy, ModeEnforce, true, OnCreate,
		"some otherwise feasible target has no failing migration path from the source node in the probe agents' fresh results (targets never probed, or whose results are stale, are admitted with a warning)"},
	{RuleInboundSlot, ModeEnforce, true, OnCreate,
		"with a migration budget, some node that could take the target pod has an inbound slot free: fewer migrations stream into it than its inbound limit, after the slots of the migrations admitted but not placed yet; a refusal queues the migration (KubeVirt's evacuation and workload updater create it again), as a ResourceQuota's does; no budget, no check"},
	{RuleVMIState, ModeEnforce, false, OnCreate,
		"the VMI exists and has no other migration in flight"},
	{RulePostCopyCancel, ModeEnforce, false, OnCancel,
		"a migration in post-copy is not cancelled unless its VMIM carries " + ForceCancelAnnotation + `: "true"`},
	{RuleHCONetwork, ModeEnforce, true, OnHyperConverged,
		"the NetworkAttachmentDefinition it names exists in the HyperConverged CR's namespace and can carry migrations: a bridge or macvlan NAD with a whereabouts range holding an address for every node that runs virt-handler, on nodes that carry its cluster network (NADs of other types are admitted with a warning: not judged)"},
	{RuleRunningPathHealthy, ModeEnforce, true, OnRunning,
		"no failure of its path between source and target that began after a running pre-copy (or Paused) migration started (first found by a probe sent after it started; one known before is `pathHealthy`'s business); enforce aborts it (deletes its VMIM, as `virtctl migrate-cancel` does), warn only records an event; post-copy is never aborted, missing or stale results abort nothing"},
}

// ForceCancelAnnotation, set to "true" on a VirtualMachineInstanceMigration, lets it be deleted
// (cancelled) while the migration is in post-copy.
const ForceCancelAnnotation = "migranet.io/force-cancel"

// Registry returns every rule's entry, in evaluation order.
func Registry() []RuleSpec { return append([]RuleSpec(nil), registry[:]...) }

// RulesOn returns the rules that judge request r, in evaluation order. The slice is shared (the
// admission hot path asks on every review): read it, never write it.
func RulesOn(r Request) []Rule {
	switch r {
	case OnCreate:
		return onCreate
	case OnCancel:
		return onCancel
	case OnRunning:
		return onRunning
	}
	return nil
}

// onCreate and onCancel are the registry's rules per request, derived once. Read-only.
var onCreate, onCancel, onRunning = rulesOn(OnCreate), rulesOn(OnCancel), rulesOn(OnRunning)

func rulesOn(r Request) []Rule {
	var out []Rule
	for i := range registry {
		if registry[i].On == r {
			out = append(out, registry[i].Rule)
		}
	}
	return out
}

// RuleNames returns every rule's name, in evaluation order.
func RuleNames() []string {
	out := make([]string, len(registry))
	for i := range registry {
		out[i] = string(registry[i].Rule)
	}
	return out
}

// SpecOf returns r's registry entry; an unknown rule gets a zero entry with mode enforce.
func SpecOf(r Rule) RuleSpec {
	for i := range registry {
		if registry[i].Rule == r {
			return registry[i]
		}
	}
	return RuleSpec{Rule: r, Default: ModeEnforce}
}

// Exemptable reports whether users in exemptUsers skip r (RuleSpec.Exemptable).
func (r Rule) Exemptable() bool { return SpecOf(r).Exemptable }

// DefaultMigrationPolicy is the canonical default value of the migration-policy setting: every
// rule at its default mode, nobody exempt. The manager stores it as the Setting's default.
func DefaultMigrationPolicy() string {
	var b strings.Builder
	b.WriteString(`{"rules":{`)
	for i := range registry {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + string(registry[i].Rule) + `":"` + string(registry[i].Default) + `"`)
	}
	b.WriteString(`},"exemptUsers":[]}`)
	return b.String()
}

// RuleTable is the registry as the Markdown table docs/settings-and-admission.md carries (a test keeps the
// two equal).
func RuleTable() string {
	var b strings.Builder
	b.WriteString("| rule | judges | default | exempt users skip it | passes when |\n|---|---|---|---|---|\n")
	for i := range registry {
		s := &registry[i]
		exempt := "no"
		if s.Exemptable {
			exempt = "yes"
		}
		judges := "VMIM " + string(s.On)
		if s.On == OnHyperConverged {
			judges = string(s.On)
		}
		b.WriteString("| `" + string(s.Rule) + "` | " + judges + " | " + string(s.Default) + " | " + exempt + " | " + s.Checks + " |\n")
	}
	return b.String()
}
