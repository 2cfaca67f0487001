package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of what validation echoes back, whatever the input: a 5 MB cluster network name or
// 200,000 overlapping excludes still get an answer of a few kilobytes.
const (
	// MaxCauses is the number of problems reported in full; the rest are counted in one more
	// cause, "and N more problems".
	MaxCauses = 20
	// maxDetail bounds one problem's message, maxPath its field path (a key can be user input).
	maxDetail = 2048
	maxPath   = 200
)

// moreDetail starts the detail of the cause that counts the problems left out.
const moreDetail = "and %d more problems not shown"

// BoundErrors returns errs with at most MaxCauses problems in full, each with its field path, bad
// value and message cut to a bounded length, followed, when problems were left out, by one
// "Too many" cause on the first problem's top-level field counting them. Applying it twice changes
// nothing more: a count from an earlier pass is added up, not reported as a problem.
func BoundErrors(errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, 0, min(len(errs), MaxCauses+1))
	hidden := 0
	root := ""
	for _, e := range errs {
		if n, ok := moreCount(e); ok {
			hidden += n
			continue
		}
		if root == "" {
			root = topField(e.Field)
		}
		if len(out) == MaxCauses {
			hidden++
			continue
		}
		out = append(out, boundError(e))
	}
	if hidden > 0 {
		out = append(out, &field.Error{Type: field.ErrorTypeTooMany, Field: root, BadValue: hidden,
			Detail: fmt.Sprintf(moreDetail+"; fix the ones above and validate again", hidden)})
	}
	return out
}

// moreCount recognises the cause BoundErrors adds, and returns its count.
func moreCount(e *field.Error) (int, bool) {
	if e == nil || e.Type != field.ErrorTypeTooMany || !strings.HasPrefix(e.Detail, "and ") {
		return 0, false
	}
	n, ok := e.BadValue.(int)
	return n, ok
}

func boundError(e *field.Error) *field.Error {
	if e == nil {
		return &field.Error{Type: field.ErrorTypeInternal, Detail: "missing error"}
	}
	c := *e
	c.Field = shortenTo(c.Field, maxPath)
	c.Detail = shortenTo(c.Detail, maxDetail)
	if s, ok := c.BadValue.(string); ok {
		c.BadValue = shorten(s)
	}
	return &c
}

// topField is the first segment of a field path ("value" of "value.exclude[3]").
func topField(path string) string {
	if i := strings.IndexAny(path, ".["); i > 0 {
		return path[:i]
	}
	return shortenTo(path, maxPath)
}

// BoundWarnings keeps at most MaxCauses warnings, each cut to a bounded length, and counts the
// rest in one more warning.
func BoundWarnings(warns []string) []string {
	if len(warns) == 0 {
		return warns
	}
	out := make([]string, 0, min(len(warns), MaxCauses+1))
	for _, w := range warns[:min(len(warns), MaxCauses)] {
		out = append(out, shortenTo(w, maxDetail))
	}
	if n := len(warns) - MaxCauses; n > 0 {
		out = append(out, fmt.Sprintf(moreDetail+" (warnings)", n))
	}
	return out
}

// MaxMessage bounds a message that lists problems, such as a condition's: half the 32768 bytes the
// API allows a condition message, room for MaxCauses problems of a few hundred bytes each.
const MaxMessage = 16 << 10

// ErrorsMessage lists errs, bounded by BoundErrors, as "field: problem; field: problem", each with
// its fix as validation words it, the whole cut to MaxMessage.
func ErrorsMessage(errs field.ErrorList) string {
	parts := make([]string, 0, len(errs))
	for _, e := range BoundErrors(errs) {
		parts = append(parts, e.Error())
	}
	return shortenTo(strings.Join(parts, "; "), MaxMessage)
}

// ShortenMessage cuts a message built from user input to a bounded length.
func ShortenMessage(s string) string { return shortenTo(s, maxDetail) }

// maxName bounds an object name echoed in a message: the API server refuses longer names (253),
// but admission may see one before it does.
const maxName = 253

// ShortenName cuts an object name for echoing in a message.
func ShortenName(s string) string { return shortenTo(s, maxName) }

// Plural is one when n is 1, else many: "1 node", "2 nodes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
