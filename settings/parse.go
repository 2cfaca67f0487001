package settings

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The one parse of a vm-migration-network value: decoded (value.go), checked by itself once
// (validate.go), the typed Network kept, and the cluster's checks run on that when asked.

// ParseAndValidateMigrationNetwork parses raw and validates the result, reporting every problem
// once: a field that failed to decode is not reported again by validation. raw "" (disabled)
// returns nil, nil, nil.
func ParseAndValidateMigrationNetwork(raw string, cl *Cluster, fld *field.Path) (*MigrationNetwork, field.ErrorList, []string) {
	c := checkRaw(raw, fld)
	errs, warns := c.judge(cl)
	return c.decoded, errs, warns
}

// ParseNetwork parses raw and runs every check of the value itself: the typed Network and the
// warnings when it passes, nil and every problem (bounded) when not; nil, nil, nil when raw is
// empty (disabled). The checks that need the cluster are Effective.Validate's.
func ParseNetwork(raw string, fld *field.Path) (*Network, field.ErrorList, []string) {
	c := checkRaw(raw, fld)
	errs, warns := c.judge(nil)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	return c.value.network(), nil, warns
}

// valueCheck is a raw value decoded and checked by itself, each string parsed once: what admission
// and the controllers judge it on, with or without the cluster.
type valueCheck struct {
	decoded *MigrationNetwork // nil: disabled, or not a JSON object
	value   *checkedValue     // nil with decoded
	errs    field.ErrorList   // the decode errors, then the value's own not on a field that failed to decode
	bad     map[string]bool   // fields that failed to decode
	fld     *field.Path
}

func checkRaw(raw string, fld *field.Path) *valueCheck {
	m, errs := ParseMigrationNetwork(raw, fld)
	c := &valueCheck{decoded: m, errs: errs, fld: fld, bad: map[string]bool{}}
	if m == nil {
		return c
	}
	for _, e := range errs {
		if e.Type != field.ErrorTypeDuplicate { // a duplicate key keeps its first value, which is still checked
			c.bad[e.Field] = true
		}
	}
	c.value = checkValue(m, fld)
	c.errs = c.keep(c.errs, c.value.errs)
	return c
}

// keep appends to errs those of more that are not on a field that failed to decode.
func (c *valueCheck) keep(errs, more field.ErrorList) field.ErrorList {
	for _, e := range more {
		if !c.bad[e.Field] && !c.bad[parentList(e.Field)] && !c.underBadMember(e.Field) {
			errs = append(errs, e)
		}
	}
	return errs
}

// judge is every problem of the value, the cluster's checks included when cl is not nil, bounded.
func (c *valueCheck) judge(cl *Cluster) (field.ErrorList, []string) {
	if c.value == nil {
		return BoundErrors(c.errs), nil
	}
	cerrs, cwarns := c.value.againstCluster(cl, c.fld)
	errs := c.keep(append(field.ErrorList(nil), c.errs...), cerrs)
	return BoundErrors(errs), BoundWarnings(append(append([]string(nil), c.value.warns...), cwarns...))
}

// underBadMember reports whether path lies under a member of the value that failed to decode
// (value.macvlan.master under value.macvlan); the value's own path does not count.
func (c *valueCheck) underBadMember(path string) bool {
	root := c.fld.String()
	for p := path; ; {
		i := strings.LastIndexByte(p, '.')
		if i <= len(root) {
			return false
		}
		if p = p[:i]; c.bad[p] {
			return true
		}
	}
}

// parentList strips a trailing [i] index from a field path string.
func parentList(path string) string {
	if i := strings.LastIndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
		return path[:i]
	}
	return path
}
