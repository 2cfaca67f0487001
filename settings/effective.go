package settings

import (
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
	// Errs are the parse errors under "value" (bounded); none when disabled.
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
