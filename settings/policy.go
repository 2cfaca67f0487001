package settings

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Mode is what a rule does when it is violated.
type Mode string

// The rule modes.
const (
	// ModeEnforce denies the request.
	ModeEnforce Mode = "enforce"
	// ModeWarn admits the request with an admission warning.
	ModeWarn Mode = "warn"
	// ModeOff skips the rule.
	ModeOff Mode = "off"
)

// Modes lists every mode.
var Modes = []Mode{ModeEnforce, ModeWarn, ModeOff}

// JSON keys of a migration-policy value.
const (
	keyRules       = "rules"
	keyExemptUsers = "exemptUsers"
)

var migrationPolicyKeys = []string{keyRules, keyExemptUsers, keyBudget}

// serviceAccountPrefix starts the username of every service account.
const serviceAccountPrefix = "system:serviceaccount:"

const examplePolicy = `{"rules":{"feasibleTarget":"warn"},"exemptUsers":["system:serviceaccount:ns:name"]}`

// MigrationPolicy is the value of the migration-policy setting. The zero value and a nil pointer
// both mean the default: every rule enforced, nobody exempt.
type MigrationPolicy struct {
	// Rules maps a rule to its mode; a rule not in the map is enforced.
	Rules map[Rule]Mode
	// ExemptUsers are usernames (service accounts as system:serviceaccount:<ns>:<name>) whose
	// requests skip the exemptable rules (see Rule.Exemptable).
	ExemptUsers []string
	// Budget is the per-node migration budget; nil: none (budget.go).
	Budget *Budget
}

// Mode returns r's mode: the policy's, else the rule's default (RuleSpec.Default).
func (p *MigrationPolicy) Mode(r Rule) Mode {
	if p != nil {
		if m, ok := p.Rules[r]; ok {
			return m
		}
	}
	return SpecOf(r).Default
}

// Exempt reports whether user is listed in ExemptUsers (exact match). It says nothing about which
// rules the user skips; see Rule.Exemptable and ModeFor.
func (p *MigrationPolicy) Exempt(user string) bool {
	return p != nil && user != "" && slices.Contains(p.ExemptUsers, user)
}

// ModeFor returns r's mode for a request by user: ModeOff when r is exemptable and user is exempt,
// else Mode(r).
func (p *MigrationPolicy) ModeFor(r Rule, user string) Mode {
	if r.Exemptable() && p.Exempt(user) {
		return ModeOff
	}
	return p.Mode(r)
}

// ParseMigrationPolicy strictly decodes a migration-policy value. An empty or whitespace-only raw
// means the default policy (every rule enforced, nobody exempt) and returns a policy with no
// entries and no errors.
//
// Decoding is strict: unknown keys (at the top level and among the rules), unknown modes, wrong
// JSON types, duplicate keys, data after the object, and empty, padded, malformed or repeated
// exemptUsers entries are errors on the offending path under fld. A null member reads as omitted.
// Whenever raw is a JSON object the returned policy is non-nil and holds every entry that decoded;
// an entry that did not decode is left out, so it keeps its default (enforced, not exempt) and a
// partly invalid policy never loosens admission.
func ParseMigrationPolicy(raw string, fld *field.Path) (*MigrationPolicy, field.ErrorList) {
	if strings.TrimSpace(raw) == "" {
		return &MigrationPolicy{}, nil
	}
	members, errs := decodeObject(raw, fld, examplePolicy)
	if members == nil {
		return nil, errs
	}
	p := &MigrationPolicy{}
	for _, mem := range members {
		path := fld.Child(shorten(mem.key))
		switch mem.key {
		case keyRules:
			var rerrs field.ErrorList
			p.Rules, rerrs = decodeRules(mem.raw, path)
			errs = append(errs, rerrs...)
		case keyExemptUsers:
			var uerrs field.ErrorList
			p.ExemptUsers, uerrs = decodeExemptUsers(mem.raw, path)
			errs = append(errs, uerrs...)
		case keyBudget:
			var berrs field.ErrorList
			p.Budget, berrs = decodeBudget(mem.raw, path)
			errs = append(errs, berrs...)
		default:
			errs = append(errs, notSupportedKey(path, mem.key, migrationPolicyKeys, "unknown key"))
		}
	}
	return p, BoundErrors(errs)
}

// decodeRules decodes the rules object: rule name → mode.
func decodeRules(raw json.RawMessage, fld *field.Path) (map[Rule]Mode, field.ErrorList) {
	if isNull(raw) {
		return nil, nil
	}
	if rawKind(raw) != "an object" {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			`must be a JSON object mapping rule names to modes, not %s; e.g. {"feasibleTarget":"warn"}`, rawKind(raw)))}
	}
	members, errs := decodeObject(string(raw), fld, `{"feasibleTarget":"warn"}`)
	if members == nil {
		return nil, errs
	}
	ruleNames := RuleNames()
	modeNames := make([]string, len(Modes))
	for i, m := range Modes {
		modeNames[i] = string(m)
	}
	out := map[Rule]Mode{}
	for _, mem := range members {
		path := fld.Child(shorten(mem.key))
		if !slices.Contains(ruleNames, mem.key) {
			errs = append(errs, notSupportedKey(path, mem.key, ruleNames, "unknown rule"))
			continue
		}
		if isNull(mem.raw) {
			continue
		}
		s, err := decodeString(mem.raw, path, `"warn"`)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !slices.Contains(modeNames, s) {
			e := field.NotSupported(path, s, modeNames)
			e.Detail = "unknown mode; " + e.Detail + " (enforce denies, warn admits with a warning, off skips the rule)"
			if lower := strings.ToLower(strings.TrimSpace(s)); lower != s && slices.Contains(modeNames, lower) {
				e.Detail += fmt.Sprintf(" (modes are lower-case: did you mean %q?)", lower)
			}
			errs = append(errs, e)
			continue
		}
		out[Rule(mem.key)] = Mode(s)
	}
	return out, errs
}

// decodeExemptUsers decodes the exemptUsers array; only entries without errors are returned.
func decodeExemptUsers(raw json.RawMessage, fld *field.Path) ([]string, field.ErrorList) {
	list, errs := decodeStringList(raw, fld, `"system:serviceaccount:ns:name"`)
	if list == nil {
		return nil, errs
	}
	bad := map[int]bool{} // entries decodeStringList reported: one lookup per error, not per error and entry
	prefix := fld.String() + "["
	for _, e := range errs {
		if strings.HasPrefix(e.Field, prefix) {
			if i := indexOf(e.Field); i >= 0 {
				bad[i] = true
			}
		}
	}
	out := make([]string, 0, len(list))
	first := map[string]int{}
	for i, u := range list {
		if bad[i] {
			continue
		}
		path := fld.Index(i)
		if err := validateUsername(u, path); err != nil {
			errs = append(errs, err)
			continue
		}
		if j, dup := first[u]; dup {
			e := field.Duplicate(path, u)
			e.Detail = fmt.Sprintf("%q is already listed at index %d; list each user once", u, j)
			errs = append(errs, e)
			continue
		}
		first[u] = i
		out = append(out, u)
	}
	return out, errs
}

// validateUsername checks one exemptUsers entry: non-empty, no surrounding whitespace, and a
// service account written as system:serviceaccount:<namespace>:<name>.
func validateUsername(u string, fld *field.Path) *field.Error {
	switch {
	case u == "":
		return field.Required(fld, `must not be empty; remove the entry or name a user, e.g. "system:serviceaccount:ns:name"`)
	case strings.TrimSpace(u) != u:
		return field.Invalid(fld, u, fmt.Sprintf("has surrounding whitespace, so it would never match a username; write %q", strings.TrimSpace(u)))
	case strings.HasPrefix(u, serviceAccountPrefix):
		ns, name, ok := strings.Cut(strings.TrimPrefix(u, serviceAccountPrefix), ":")
		if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
			return field.Invalid(fld, u, "a service account's username is system:serviceaccount:<namespace>:<name>, e.g. system:serviceaccount:kube-system:descheduler")
		}
	}
	return nil
}

// notSupportedKey reports key as not one of valid, suggesting the right case when only case differs.
func notSupportedKey(p *field.Path, key string, valid []string, what string) *field.Error {
	e := field.NotSupported(p, shorten(key), valid)
	e.Detail = what + "; " + e.Detail
	for _, k := range valid {
		if k != key && strings.EqualFold(k, key) {
			e.Detail += fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", k)
		}
	}
	return e
}
