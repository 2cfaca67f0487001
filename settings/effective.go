package settings

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Effective is what a vm-migration-network Setting asks for, derived in one place: the effective
// value (EffectiveValue) parsed, its hash and the name of the NAD it renders to.
type Effective struct {
	// Network is the parsed value; nil when the migration network is disabled or the value does
	// not parse.
	Network *MigrationNetwork
	// Hash and NAD are Network's hash and NAD name; "" when Network is nil.
	Hash, NAD string
	// Errs are the parse errors under "value" (bounded); none when disabled. EffectiveNetwork only
	// parses: ValidateEffective judges the value as admission does.
	Errs field.ErrorList
}

// Disabled reports whether the setting asks for no migration network: an empty effective value.
// An unparsable value is neither disabled nor enabled: Errs says why.
func (e Effective) Disabled() bool { return e.Network == nil && len(e.Errs) == 0 }

// EffectiveNetwork parses s's effective value and derives its hash and NAD name. A nil s is
// disabled.
func EffectiveNetwork(s *v1beta1.Setting) Effective {
	m, errs := ParseMigrationNetwork(EffectiveValue(s), field.NewPath("value"))
	if len(errs) > 0 {
		return Effective{Errs: errs}
	}
	return EffectiveOf(m)
}

// EffectiveOf derives, once, the hash and NAD name of a parsed network; nil is disabled. Everything
// downstream (the NAD render, the applied hash, the readiness snapshot) takes them from here.
func EffectiveOf(m *MigrationNetwork) Effective {
	if m == nil {
		return Effective{}
	}
	h := m.Hash()
	return Effective{Network: m, Hash: h, NAD: NADName(h)}
}

// EffectivePath is the field the effective value comes from: "value", or "default" when value
// holds nothing but whitespace.
func EffectivePath(s *v1beta1.Setting) *field.Path {
	if s != nil && strings.TrimSpace(s.Value) == "" && s.Default != "" {
		return field.NewPath("default")
	}
	return field.NewPath("value")
}

// ValidateEffective judges s's effective value as admission judges a stored value:
// ParseAndValidateMigrationNetwork against cl (nil: only the checks of the value itself), errors
// under EffectivePath, bounded. The empty value (disabled) is valid. The settings controller runs
// it before applying anything, for values stored while the webhook did not see them.
func ValidateEffective(s *v1beta1.Setting, cl *Cluster) field.ErrorList {
	_, errs, _ := ParseAndValidateMigrationNetwork(EffectiveValue(s), cl, EffectivePath(s))
	return errs
}
