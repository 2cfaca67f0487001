package settings

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Longest range prefixes: whereabouts never assigns a range's first and last address, so a range
// needs at least four addresses to leave two assignable ones.
const (
	maxRangeBitsV4 = 30
	maxRangeBitsV6 = 126
)

var errNotCIDR = errors.New("not a CIDR or IP address")

// parsePrefixOrAddr parses a CIDR, or a bare IP taken as /32 or /128 (bare reports which). The
// prefix is returned as written (host bits are not masked). Zoned and IPv4-mapped IPv6 addresses
// are refused.
func parsePrefixOrAddr(s string) (p netip.Prefix, bare bool, err error) {
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(s)
		if err == nil {
			if a.Zone() != "" {
				return netip.Prefix{}, true, errNotCIDR
			}
			p, bare = netip.PrefixFrom(a, a.BitLen()), true
		}
	}
	if err != nil {
		return netip.Prefix{}, bare, errNotCIDR
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, bare, fmt.Errorf("IPv4-mapped IPv6 is not supported")
	}
	return p, bare, nil
}

// family names a prefix's address family.
func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// maxRangeBits is the longest prefix a range of p's family may have.
func maxRangeBits(p netip.Prefix) int {
	if p.Addr().Is4() {
		return maxRangeBitsV4
	}
	return maxRangeBitsV6
}

// checkedRange is the outcome of validating range.
type checkedRange struct {
	prefix netip.Prefix // masked; valid when usable
	usable bool         // parsed: further checks (excludes, MTU family) can use prefix
	clean  bool         // no error at all: capacity can be computed
}

func validateRange(s string, fld *field.Path) (checkedRange, field.ErrorList) {
	if s == "" {
		return checkedRange{}, field.ErrorList{field.Required(fld,
			`set the CIDR migration addresses come from, e.g. "192.168.100.0/24" or "fd00:100::/64"`)}
	}
	if !strings.Contains(s, "/") {
		detail := `must be a CIDR with a prefix length, e.g. "192.168.100.0/24"`
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" && !a.Is4In6() {
			detail = fmt.Sprintf("is a single address, not a range; add a prefix length, e.g. %q", suggestRange(a))
		}
		return checkedRange{}, field.ErrorList{field.Invalid(fld, s, detail)}
	}
	p, _, err := parsePrefixOrAddr(s)
	if err != nil {
		return checkedRange{}, field.ErrorList{field.Invalid(fld, s, cidrParseDetail(err, "a range",
			`"192.168.100.0/24" or "fd00:100::/64"`))}
	}
	r := checkedRange{prefix: p.Masked(), usable: true, clean: true}
	var errs field.ErrorList
	if p != p.Masked() {
		r.clean = false
		errs = append(errs, field.Invalid(fld, s, fmt.Sprintf(
			"has host bits set, so it is not a network address; did you mean %q?", p.Masked())))
	}
	if limit := maxRangeBits(p); p.Bits() > limit {
		r.clean = false
		errs = append(errs, field.Invalid(fld, s, fmt.Sprintf(
			"/%d leaves no assignable address once the range's first and last addresses are skipped; "+
				"use an %s prefix of /%d or shorter, e.g. %q", p.Bits(), family(p), limit,
			netip.PrefixFrom(p.Addr(), limit).Masked())))
	}
	return r, errs
}

// suggestRange proposes a common range around a single address.
func suggestRange(a netip.Addr) netip.Prefix {
	if a.Is4() {
		return netip.PrefixFrom(a, 24).Masked()
	}
	return netip.PrefixFrom(a, 64).Masked()
}

func cidrParseDetail(err error, what, example string) string {
	if errors.Is(err, errNotCIDR) {
		return fmt.Sprintf("is not a valid CIDR; write %s as an address and a prefix length, e.g. %s", what, example)
	}
	return fmt.Sprintf("%v; write the plain IPv4 form instead, e.g. %s", err, example)
}

// exclEntry is an exclude entry that parsed.
type exclEntry struct {
	idx    int
	prefix netip.Prefix // masked
	raw    string
}

// validateExcludes checks every exclude entry against rng and against each other. It returns the
// entries that parsed with rng's family (for the capacity count) and whether the count is
// meaningful: every entry parsed with the right family and none already reported as covering the
// whole range.
func validateExcludes(excl []string, rng checkedRange, fld *field.Path) ([]netip.Prefix, bool, field.ErrorList) {
	var errs field.ErrorList
	countable := true
	parsed := make([]netip.Prefix, 0, len(excl))
	candidates := make([]exclEntry, 0, len(excl)) // inside the range: checked for duplicates and overlap
	for i, s := range excl {
		p := func() *field.Path { return fld.Index(i) } // built only for an error
		pfx, bare, err := parsePrefixOrAddr(s)
		if err != nil {
			countable = false
			errs = append(errs, field.Invalid(p(), s, cidrParseDetail(err, "an exclude",
				`"192.168.100.16/28" or a single address such as "192.168.100.1"`)))
			continue
		}
		if !bare && pfx != pfx.Masked() {
			errs = append(errs, field.Invalid(p(), s, fmt.Sprintf(
				"has host bits set, so it is not a network address; did you mean %q (or the single address %q)?",
				pfx.Masked(), pfx.Addr())))
		}
		pfx = pfx.Masked()
		if !rng.usable {
			parsed = append(parsed, pfx)
			continue
		}
		r := rng.prefix
		if pfx.Addr().Is4() != r.Addr().Is4() {
			countable = false
			errs = append(errs, field.Invalid(p(), s, fmt.Sprintf(
				"is %s but range %s is %s; excludes must be of the range's family", family(pfx), r, family(r))))
			continue
		}
		parsed = append(parsed, pfx)
		switch {
		case pfx.Bits() <= r.Bits() && pfx.Contains(r.Addr()):
			countable = false
			errs = append(errs, field.Invalid(p(), s, fmt.Sprintf(
				"covers the whole range %s, which would leave nothing to assign; exclude a narrower block", r)))
		case !(pfx.Bits() > r.Bits() && r.Contains(pfx.Addr())):
			errs = append(errs, field.Invalid(p(), s, fmt.Sprintf(
				"is outside range %s; remove it or fix the address (every exclude must lie inside the range)", r)))
		default:
			candidates = append(candidates, exclEntry{idx: i, prefix: pfx, raw: s})
		}
	}
	errs = append(errs, checkExcludeOverlaps(candidates, fld)...)
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return cmp.Compare(indexOf(a.Field), indexOf(b.Field)) })
	return parsed, countable, errs
}

// checkExcludeOverlaps reports duplicates and overlaps among entries in O(n log n): sort by first
// address (wider block first on ties), then sweep keeping the entry that reaches furthest. Two CIDRs
// either nest or are disjoint, so an entry starting at or before that furthest end lies inside it.
// Each problem is reported on the later-indexed entry of a pair, naming the earlier one.
func checkExcludeOverlaps(es []exclEntry, fld *field.Path) field.ErrorList {
	if len(es) < 2 {
		return nil
	}
	sorted := es // owned by the caller, which no longer needs its order
	slices.SortFunc(sorted, func(a, b exclEntry) int {
		if c := comparePrefixes(a.prefix, b.prefix); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	type found struct {
		idx int
		err *field.Error
	}
	var hits []found
	reach := sorted[0] // the entry whose block ends furthest so far
	reachEnd := lastAddr(reach.prefix)
	for _, cur := range sorted[1:] {
		if cur.prefix.Addr().Compare(reachEnd) <= 0 { // inside reach (or equal to it)
			later := max(cur.idx, reach.idx)
			hits = append(hits, found{idx: later, err: overlapError(fld, reach, cur)})
			continue
		}
		reach, reachEnd = cur, lastAddr(cur.prefix)
	}
	slices.SortStableFunc(hits, func(a, b found) int { return cmp.Compare(a.idx, b.idx) })
	errs := make(field.ErrorList, len(hits))
	for i, h := range hits {
		errs[i] = h.err
	}
	return errs
}

func overlapError(fld *field.Path, a, b exclEntry) *field.Error {
	first, later := a, b
	if later.idx < first.idx {
		first, later = later, first
	}
	p := fld.Index(later.idx)
	if first.prefix == later.prefix {
		e := field.Duplicate(p, later.raw)
		e.Detail = fmt.Sprintf("duplicates exclude[%d] (%q), both are %s; remove one of them", first.idx, first.raw, later.prefix)
		return e
	}
	inner, outer := later, first
	if inner.prefix.Bits() < outer.prefix.Bits() {
		inner, outer = outer, inner
	}
	return field.Invalid(p, later.raw, fmt.Sprintf(
		"overlaps exclude[%d] (%q): %s lies inside %s; excludes must not overlap, keep only %s or split it",
		first.idx, first.raw, inner.prefix, outer.prefix, outer.prefix))
}

// indexOf returns the trailing [i] of a field path, or -1.
func indexOf(path string) int {
	i := strings.LastIndexByte(path, '[')
	if i < 0 || !strings.HasSuffix(path, "]") {
		return -1
	}
	n, err := strconv.Atoi(path[i+1 : len(path)-1])
	if err != nil {
		return -1
	}
	return n
}
