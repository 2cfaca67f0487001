package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

// OwnedSettings are the names of the settings migranet owns; the manager creates each with its
// DefaultOf.
var OwnedSettings = []string{v1beta1.MigrationNetwork, v1beta1.MigrationPolicy}

// DefaultOf is the default value of the owned setting name: none for vm-migration-network
// (migrations use the pod network), every rule at its default for migration-policy.
func DefaultOf(name string) string {
	if name == v1beta1.MigrationPolicy {
		return DefaultMigrationPolicy()
	}
	return ""
}

// EffectiveValue is the value in force: Value when it holds more than whitespace, else Default.
func EffectiveValue(s *v1beta1.Setting) string {
	if s == nil {
		return ""
	}
	if strings.TrimSpace(s.Value) != "" {
		return s.Value
	}
	return s.Default
}

// ValidateSetting validates a Setting by name. vm-migration-network: value and default both get
// every rule of ParseAndValidateMigrationNetwork (paths "value…" and "default…"). migration-policy:
// value and default must each be empty or a valid policy (ParseMigrationPolicy). Any other name is
// an error on metadata.name. Warnings are prefixed with their field path.
func ValidateSetting(s *v1beta1.Setting, cl *Cluster) (field.ErrorList, []string) {
	_, errs, warns := JudgeSetting(s, cl)
	return errs, warns
}

// JudgeSetting is ValidateSetting that also returns, for vm-migration-network, the Effective of
// the value in force derived from the same parse (the setting webhook compares its hash with the
// old object's); the zero Effective for other settings.
func JudgeSetting(s *v1beta1.Setting, cl *Cluster) (Effective, field.ErrorList, []string) {
	var eff Effective
	if s == nil {
		return eff, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "no Setting given")}, nil
	}
	var errs field.ErrorList
	var warns []string
	fields := []struct {
		path *field.Path
		raw  string
	}{{field.NewPath("value"), s.Value}, {field.NewPath("default"), s.Default}}
	switch s.Name {
	case v1beta1.MigrationNetwork:
		inForce := EffectivePath(s).String()
		for _, f := range fields {
			c := checkRaw(f.raw, f.path)
			ferrs, fwarns := c.judge(cl)
			errs = append(errs, ferrs...)
			warns = append(warns, fwarns...)
			if f.path.String() == inForce {
				eff = effectiveOf(c)
			}
		}
	case v1beta1.MigrationPolicy:
		for _, f := range fields {
			ferrs, fwarns := ValidateMigrationPolicy(f.raw, f.path, cl.migrationLimits())
			errs = append(errs, ferrs...)
			warns = append(warns, fwarns...)
		}
	default:
		e := field.NotSupported(field.NewPath("metadata", "name"), s.Name, OwnedSettings)
		e.Detail = fmt.Sprintf("migranet owns only the settings %q and %q; %s",
			v1beta1.MigrationNetwork, v1beta1.MigrationPolicy, e.Detail)
		errs = append(errs, e)
	}
	return eff, BoundErrors(errs), BoundWarnings(warns)
}

// ValidateMigrationPolicy accepts an empty value or a value ParseMigrationPolicy decodes without
// errors, whose budget ValidateBudget admits against the KubeVirt CR's limits l; warnings are
// ValidateBudget's.
func ValidateMigrationPolicy(raw string, fld *field.Path, l MigrationLimits) (field.ErrorList, []string) {
	p, errs := ParseMigrationPolicy(raw, fld)
	if p == nil || p.Budget == nil {
		return errs, nil
	}
	berrs, warns := ValidateBudget(p.Budget, fld.Child(keyBudget), l)
	return append(errs, berrs...), warns
}
