package webhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// MetricAdmissionDecisions is the name of the counter of admission decisions.
const MetricAdmissionDecisions = "migranet_admission_decisions_total"

// Values of the webhook label: which admission request was decided.
const (
	WebhookSetting    = "setting"     // Setting create, update, delete
	WebhookVMIMCreate = "vmim-create" // VirtualMachineInstanceMigration create (start a migration)
	WebhookVMIMDelete = "vmim-delete" // VirtualMachineInstanceMigration delete (cancel a migration)
	WebhookNAD        = "nad"         // NetworkAttachmentDefinition delete
	WebhookKubeVirt   = "kubevirt"    // KubeVirt CR update
	// WebhookHyperConverged: HCO's HyperConverged CR create and update (its migration network).
	WebhookHyperConverged = "hyperconverged"
)

// Values of the result label.
const (
	ResultAllowed = "allowed" // admitted without warnings
	ResultDenied  = "denied"  // refused
	ResultWarned  = "warned"  // admitted with warnings
	ResultError   = "error"   // not judged: reading the cache failed or the object did not decode
)

// Values of the rule label besides the settings.Rule names, which the VMIM webhooks use.
const (
	RuleNone               = "none"               // nothing was violated (allowed, error)
	RuleSettingValue       = "settingValue"       // the value or default breaks settings.ValidateSetting
	RuleMigrationsInFlight = "migrationsInFlight" // the migration network cannot change during migrations
	RuleOwnedSetting       = "ownedSetting"       // deleting a setting migranet owns
	RuleHarvesterMode      = "harvesterMode"      // a value for migranet's network setting in Harvester mode
	RuleActiveNetwork      = "activeNetwork"      // deleting the NAD the KubeVirt CR uses
	RuleNetworkMismatch    = "networkMismatch"    // KubeVirt migrations.network set by hand
)

// MetricTargetPods is the name of the counter of pod reviews the steering webhook answered.
const MetricTargetPods = "migranet_target_pods_total"

// Values of MetricTargetPods' result label.
const (
	SteerSteered   = "steered"    // affinity added
	SteerNoTarget  = "no_target"  // affinity added, and no node is left for the pod
	SteerUnchanged = "unchanged"  // a migration target pod left as KubeVirt made it (nothing to add, or not steerable)
	SteerNotTarget = "not_target" // not a migration target pod: the webhook's objectSelector should have kept it away
	SteerError     = "error"      // the cache could not be read: left unchanged
)

// outcome is one labelled series of MetricAdmissionDecisions.
type outcome struct{ webhook, rule, result string }

// outcomes lists every series the webhooks can produce; they are created at zero up front.
func outcomes() []outcome {
	out := []outcome{
		{WebhookSetting, RuleSettingValue, ResultDenied}, {WebhookSetting, RuleSettingValue, ResultWarned},
		{WebhookSetting, RuleMigrationsInFlight, ResultDenied}, {WebhookSetting, RuleOwnedSetting, ResultDenied},
		{WebhookSetting, RuleHarvesterMode, ResultDenied},
		{WebhookNAD, RuleActiveNetwork, ResultDenied},
		{WebhookKubeVirt, RuleNetworkMismatch, ResultWarned},
	}
	for _, spec := range settings.Registry() {
		if spec.On == settings.OnRunning {
			continue // judged by the path-abort controller, not by admission
		}
		w := WebhookVMIMCreate
		switch spec.On {
		case settings.OnCancel:
			w = WebhookVMIMDelete
		case settings.OnHyperConverged:
			w = WebhookHyperConverged
		}
		out = append(out, outcome{w, string(spec.Rule), ResultDenied}, outcome{w, string(spec.Rule), ResultWarned})
	}
	for _, w := range []string{WebhookSetting, WebhookVMIMCreate, WebhookVMIMDelete, WebhookNAD, WebhookKubeVirt, WebhookHyperConverged} {
		out = append(out, outcome{w, RuleNone, ResultAllowed}, outcome{w, RuleNone, ResultError})
	}
	return out
}

// Metrics counts admission decisions in MetricAdmissionDecisions{webhook,rule,result}: one per
// admission request, labelled with the rule that decided it (the first denying rule in evaluation
// order, else the first warning one, else "none"). A nil *Metrics counts nothing.
type Metrics struct {
	decisions *prometheus.CounterVec
	// pods counts the steering webhook's pod reviews by result (MetricTargetPods).
	pods map[string]prometheus.Counter
	// counters holds the child of every known outcome, resolved once: counting then costs a map
	// lookup and an atomic add, no label hashing. Read-only after NewMetrics.
	counters map[outcome]prometheus.Counter
}

// NewMetrics creates the counter, registers it with reg (nil: not registered), reusing one
// registered before by another instance, and creates every known series at zero.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	vec, err := statuswrite.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricAdmissionDecisions,
		Help: "Admission requests decided by migranet's webhooks, by webhook, deciding rule (none when nothing was violated) and result (allowed, denied, warned, error).",
	}, []string{"webhook", "rule", "result"}))
	if err != nil {
		return nil, err
	}
	pods, err := statuswrite.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricTargetPods,
		Help: "Pod creates the target pod steering webhook answered, by result (steered, no_target, unchanged, not_target, error); not_target stays 0 while the webhook's objectSelector holds.",
	}, []string{"result"}))
	if err != nil {
		return nil, err
	}
	m := &Metrics{decisions: vec, counters: map[outcome]prometheus.Counter{}, pods: map[string]prometheus.Counter{}}
	for _, o := range outcomes() {
		m.counters[o] = vec.WithLabelValues(o.webhook, o.rule, o.result)
	}
	for _, r := range []string{SteerSteered, SteerNoTarget, SteerUnchanged, SteerNotTarget, SteerError} {
		m.pods[r] = pods.WithLabelValues(r)
	}
	return m, nil
}

// steered counts one pod review of the steering webhook.
func (m *Metrics) steered(result string) {
	if m != nil {
		m.pods[result].Inc()
	}
}

// count adds one decision.
func (m *Metrics) count(webhook, rule, result string) {
	if m == nil {
		return
	}
	if c, ok := m.counters[outcome{webhook, rule, result}]; ok {
		c.Inc()
		return
	}
	m.decisions.WithLabelValues(webhook, rule, result).Inc()
}

// decided counts the outcome of a VMIM webhook's decisions.
func (m *Metrics) decided(webhook string, ds []migrationcheck.Decision) {
	if m == nil {
		return
	}
	rule, result := DecisionOutcome(ds)
	m.count(webhook, rule, result)
}

// DecisionOutcome is the rule and result label of a request judged by ds: the first denying
// rule, else the first warning rule, else RuleNone and ResultAllowed.
func DecisionOutcome(ds []migrationcheck.Decision) (rule, result string) {
	for _, d := range ds {
		if d.Deny {
			return string(d.Rule), ResultDenied
		}
	}
	for _, d := range ds {
		if d.Warn {
			return string(d.Rule), ResultWarned
		}
	}
	return RuleNone, ResultAllowed
}

// simple counts a webhook without rule decisions: refused by rule when err is not nil, warned by
// rule when there are warnings, else allowed.
func (m *Metrics) simple(webhook, rule string, warnings []string, err error) {
	switch {
	case err != nil:
		m.count(webhook, rule, ResultDenied)
	case len(warnings) > 0:
		m.count(webhook, rule, ResultWarned)
	default:
		m.count(webhook, RuleNone, ResultAllowed)
	}
}
