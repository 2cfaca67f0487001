package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Summary is the migration policy's short human form for `kubectl get` (the Setting's
// status.summary, its VALUE column): the rules not enforced as rule=mode in evaluation order, or
// "all enforced", then "(N exempt)" when users are exempt. E.g.
// "feasibleTarget=warn postCopyCancel=off (1 exempt)"; a budget adds ", budget 1Gi/s" and its
// overrides ("budget 1Gi/s (+2 node overrides)").
func (p *MigrationPolicy) Summary() string {
	var parts []string
	for _, spec := range registry {
		r := spec.Rule
		if m := p.Mode(r); m != ModeEnforce {
			parts = append(parts, string(r)+"="+string(m))
		}
	}
	out := "all enforced"
	if len(parts) > 0 {
		out = strings.Join(parts, " ")
	}
	if p != nil && len(p.ExemptUsers) > 0 {
		out += fmt.Sprintf(" (%d exempt)", len(p.ExemptUsers))
	}
	if p != nil && p.Budget != nil {
		out += ", budget " + Rate(p.Budget.Bandwidth.Value())
		if n := len(p.Budget.Nodes); n > 0 {
			out += fmt.Sprintf(" (+%d node %s)", n, Plural(n, "override", "overrides"))
		}
	}
	return out
}

// PolicySummary is the summary of a migration-policy setting's effective value.
func PolicySummary(s *v1beta1.Setting) string {
	p, errs := ParseMigrationPolicy(EffectiveValue(s), field.NewPath("value"))
	if len(errs) > 0 {
		return "invalid"
	}
	return p.Summary()
}
