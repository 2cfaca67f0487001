package settings

import (
	"fmt"
	"strings"
)

// Summary is the migration policy's short human form for `kubectl get` (the Setting's
// status.summary, its VALUE column): the rules not enforced as rule=mode in evaluation order, or
// "all enforced", then "(N exempt)" when users are exempt. E.g.
// "feasibleTarget=warn postCopyCancel=off (1 exempt)".
func (p *MigrationPolicy) Summary() string {
	var parts []string
	for _, r := range Rules {
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
	return out
}
