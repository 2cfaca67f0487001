package migrationcheck

import (
	"context"
	"fmt"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// Verdicts of one rule in a preflight.
const (
	VerdictPass    = "pass"    // the rule holds
	VerdictWarn    = "warn"    // violated, in warn mode: admitted with a warning
	VerdictFail    = "fail"    // violated, enforced: refused
	VerdictOff     = "off"     // the migration-policy turns the rule off
	VerdictExempt  = "exempt"  // the user is in exemptUsers and the rule is exemptable
	VerdictSkipped = "skipped" // not judged: feasibleTarget and pathHealthy without a VMI
)

// RuleVerdict is one create rule's verdict for a would-be migration.
type RuleVerdict struct {
	Rule    settings.Rule `json:"rule"`
	Verdict string        `json:"verdict"`
	// Message is the webhook's own text ("migranet <rule>: ...") for warn and fail.
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// NodeVerdict says whether one node could receive the VMI, and if not, the first feasibleTarget
// filter it fails.
type NodeVerdict struct {
	Node   string `json:"node"`
	Fits   bool   `json:"fits"`
	Reason string `json:"reason,omitempty"`
	// Path is, for a node that fits, its migration path from the source as rule pathHealthy
	// judges it: "verified", "unverified: <why>" or "failing: <what failed>"; "" when paths are
	// not judged (the rule off, no migration network, no probe results).
	Path string `json:"path,omitempty"`
	// HarvesterOffers says whether Harvester's migrate action offers the node as a target
	// (settings/harvestermode.OfferedTargets); nil when Harvester is not there or its offer could
	// not be read. The rules never set it: `migranet preflight` does, beside them.
	HarvesterOffers *bool `json:"harvesterOffers,omitempty"`
	// Inbound is, for a node that fits, under a budget whose traffic was counted, the migrations
	// streaming into it against its inbound limit: "1/2", "2/2 full" (rule inboundSlot and the
	// steering pass a full node by); "" when no budget is in force or the traffic is not counted.
	Inbound string `json:"inbound,omitempty"`
}

// PreflightResult is what the webhook would answer to a VMIM create, with every rule's verdict
// and every node's eligibility.
type PreflightResult struct {
	// Admitted is true when the create would be admitted (possibly with Warnings).
	Admitted bool `json:"admitted"`
	// Warnings are the admission warnings, word for word.
	Warnings []string `json:"warnings,omitempty"`
	// Refusal is the refusal's text, word for word; "" when admitted.
	Refusal string        `json:"refusal,omitempty"`
	Rules   []RuleVerdict `json:"rules"`
	// Nodes is nil when the VMI does not exist.
	Nodes []NodeVerdict `json:"nodes,omitempty"`
}

// Preflight judges vmim as the webhook's create would for user, on the state st reads: the same
// gathering (GatherCreate), the same rules (EvaluateCreate) and the same answer (Answer).
// `migranet preflight` passes an APIState instead of the webhook's Informers.
func Preflight(ctx context.Context, st State, vmim *kubevirtv1.VirtualMachineInstanceMigration, user string) (*PreflightResult, error) {
	in, err := GatherCreate(ctx, st, vmim, user)
	if err != nil {
		return nil, err
	}
	ds := EvaluateCreate(*in)
	warnings, refusal := Answer(vmim, ds, false)
	out := &PreflightResult{Admitted: refusal == nil, Warnings: warnings, Rules: ruleVerdicts(in, ds)}
	if refusal != nil {
		out.Refusal = refusal.Error()
	}
	if in.VMI != nil {
		out.Nodes = TargetNodes(in)
	}
	return out, nil
}

// ruleVerdicts gives every create rule a verdict from the decisions EvaluateCreate returned.
func ruleVerdicts(in *CreateInput, ds []Decision) []RuleVerdict {
	rules := settings.RulesOn(settings.OnCreate)
	out := make([]RuleVerdict, 0, len(rules))
	for _, r := range rules {
		rv := RuleVerdict{Rule: r, Verdict: VerdictPass}
		switch {
		case in.Policy.Mode(r) == settings.ModeOff:
			rv.Verdict = VerdictOff
		case in.Policy.ModeFor(r, in.User) == settings.ModeOff:
			rv.Verdict = VerdictExempt
		case (r == settings.RuleFeasibleTarget || r == settings.RulePathHealthy) && in.VMI == nil:
			rv.Verdict = VerdictSkipped
		case r == settings.RuleInboundSlot:
			if _, judged := roomFor(in); !judged {
				rv.Verdict = VerdictSkipped // no budget, no VMI, or the traffic not counted
			}
		}
		for _, d := range ds {
			if d.Rule != r {
				continue
			}
			rv.Verdict, rv.Message, rv.Field = VerdictWarn, d.Text(), d.Field
			if d.Deny {
				rv.Verdict = VerdictFail
			}
		}
		out = append(out, rv)
	}
	return out
}

// TargetNodes says, for every node, whether it can take the target pod of in's VMI, which must
// be set, and if not, the first check it fails, in the rule's own words.
func TargetNodes(in *CreateInput) []NodeVerdict {
	t, conflict := newTarget(in)
	out := make([]NodeVerdict, 0, len(in.Nodes))
	limits := settings.MigrationLimitsOf(in.KubeVirt)
	for _, n := range in.Nodes {
		if n == nil {
			continue
		}
		nv := NodeVerdict{Node: n.Name}
		if conflict != "" {
			nv.Reason = "spec.addedNodeSelector conflicts with the VMI's nodeSelector"
		} else if v := t.judge(n); v.stage == numStages {
			nv.Fits, nv.Path = true, t.pathVerdict(n.Name)
			if strings.HasPrefix(nv.Path, "failing: ") && in.Policy.Mode(settings.RulePathHealthy) == settings.ModeEnforce {
				// The steering keeps the target pod off it (Steer): not a target.
				nv.Fits, nv.Path = false, ""
				nv.Reason = "excluded: its migration path from " + t.source + " fails: " + strings.TrimPrefix(t.pathVerdict(n.Name), "failing: ")
			}
			if nv.Fits && in.Policy != nil && in.Policy.Budget != nil && in.Traffic != nil {
				nv.Inbound = inboundWords(in.Traffic.In[n.Name], limits.InboundLimit(in.Policy.Budget.For(n.Labels)))
			}
		} else {
			g := group{v: v, count: 1}
			nv.Reason = strings.TrimPrefix(t.reason(&g), "1 ")
		}
		out = append(out, nv)
	}
	return out
}

// inboundWords is a node's inbound migrations against its limit: "1/2", or "2/2 full".
func inboundWords(in, limit int) string {
	w := fmt.Sprintf("%d/%d", in, limit)
	if in >= limit {
		w += " full"
	}
	return w
}
