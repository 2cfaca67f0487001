package settings

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

func TestBoundErrors(t *testing.T) {
	many := func(n int) field.ErrorList {
		var errs field.ErrorList
		for i := range n {
			errs = append(errs, field.Invalid(field.NewPath("value", "exclude").Index(i), "x", "bad"))
		}
		return errs
	}
	tests := []struct {
		name  string
		in    field.ErrorList
		n     int    // errors out
		last  string // substring of the last error
		total string // substring of the joined output
	}{
		{name: "none", in: nil, n: 0},
		{name: "at the cap", in: many(MaxCauses), n: MaxCauses, last: "value.exclude[19]"},
		{name: "one over", in: many(MaxCauses + 1), n: MaxCauses + 1, last: "value: Too many: 1: and 1 more problems not shown"},
		{name: "200,000", in: many(200000), n: MaxCauses + 1, last: "and 199980 more problems"},
		{name: "long path, value and detail",
			in: field.ErrorList{field.Invalid(field.NewPath("value").Child(strings.Repeat("k", 5000)), strings.Repeat("v", 5000), strings.Repeat("d", 5000))},
			n:  1, total: "…(5006 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BoundErrors(tt.in)
			if len(got) != tt.n {
				t.Fatalf("%d errors, want %d", len(got), tt.n)
			}
			if again := BoundErrors(got); fmt.Sprint(again) != fmt.Sprint(got) {
				t.Errorf("a second pass changed the list:\n%v\n%v", got, again)
			}
			if tt.n == 0 {
				return
			}
			if !strings.Contains(got[len(got)-1].Error(), tt.last) {
				t.Errorf("last error %q lacks %q", got[len(got)-1].Error(), tt.last)
			}
			joined := got.ToAggregate().Error()
			if !strings.Contains(joined, tt.total) || len(joined) > 16<<10 {
				t.Errorf("output (%d bytes) lacks %q or is too long", len(joined), tt.total)
			}
		})
	}
}

// TestErrorsMessage: the problems as one message for a condition or an event, each with its field,
// cut to MaxMessage whatever the input (the API refuses condition messages over 32768 bytes).
// Catches: a problem left out or without its field; the list not bounded by BoundErrors; the
// whole not cut (20 causes of 2 KiB each are 40 KiB).
func TestErrorsMessage(t *testing.T) {
	long := func(n int) field.ErrorList {
		var errs field.ErrorList
		for i := range n {
			errs = append(errs, field.Invalid(field.NewPath("value", "exclude").Index(i), "x", strings.Repeat("d", 3000)))
		}
		return errs
	}
	tests := []struct {
		name string
		in   field.ErrorList
		want []string // substrings, in order
	}{
		{name: "none", in: nil},
		{name: "two", in: field.ErrorList{
			field.Invalid(field.NewPath("value", "vlan"), 4095, "must be between 0 and 4094"),
			field.Required(field.NewPath("value", "range"), "name the range"),
		}, want: []string{"value.vlan: Invalid value: 4095: must be between 0 and 4094; value.range: Required value: name the range"}},
		{name: "many long ones", in: long(30), want: []string{"value.exclude[0]: ", "value.exclude[1]: ", "bytes)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorsMessage(tt.in)
			if len(got) > MaxMessage {
				t.Errorf("%d bytes, more than %d", len(got), MaxMessage)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("message lacks %q (in order):\n%.300s", w, got)
				}
				rest = rest[i+len(w):]
			}
			if tt.in == nil && got != "" {
				t.Errorf("no problems gave %q", got)
			}
		})
	}
	var many field.ErrorList
	for i := range 200000 {
		many = append(many, field.Invalid(field.NewPath("value", "exclude").Index(i), "x", "bad"))
	}
	if got := ErrorsMessage(many); !strings.Contains(got, "and 199980 more problems not shown") || len(got) > MaxMessage {
		t.Errorf("200,000 problems: %d bytes, %.200s…", len(got), got)
	}
}

// TestHostileValuesBounded runs the hostile values through ValidateSetting: each answer
// is a few kilobytes at most, and still names the problem.
func TestHostileValuesBounded(t *testing.T) {
	big := strings.Repeat("a", 5<<20)
	excl := make([]string, 200000)
	for i := range excl {
		excl[i] = `"10.0.0.0/30"`
	}
	users := strings.Repeat(`1,`, 200000) + `1`
	tests := []struct {
		name, setting, value, want string
	}{
		{"5 MB clusterNetwork", v1beta1.MigrationNetwork, `{"clusterNetwork":"` + big + `","vlan":1,"range":"10.0.0.0/8"}`, "is 5242880 bytes long"},
		{"200,000 overlapping excludes", v1beta1.MigrationNetwork,
			`{"clusterNetwork":"m","vlan":1,"range":"10.0.0.0/8","exclude":[` + strings.Join(excl, ",") + `]}`, "and 199979 more problems"},
		{"5 MB key", v1beta1.MigrationNetwork, `{"` + big + `":1}`, "unknown key"},
		{"5 MB syntax error", v1beta1.MigrationNetwork, `{"clusterNetwork":"` + big, "not valid JSON"},
		{"200,000 exemptUsers of the wrong type", v1beta1.MigrationPolicy, `{"exemptUsers":[` + users + `]}`, "and 199981 more problems"},
		{"5 MB rule name", v1beta1.MigrationPolicy, `{"rules":{"` + big + `":"warn"}}`, "unknown rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: tt.setting}, Value: tt.value}
			errs, warns := ValidateSetting(s, nil)
			if len(errs) > MaxCauses+1 || len(warns) > MaxCauses+1 { // before joining them: that is quadratic in apimachinery
				t.Fatalf("%d errors and %d warnings, want at most %d each", len(errs), len(warns), MaxCauses+1)
			}
			out := errs.ToAggregate().Error() + strings.Join(warns, "\n")
			if len(out) > 16<<10 || len(errs) > MaxCauses+1 {
				t.Fatalf("%d errors, %d bytes: %.300s", len(errs), len(out), out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("answer lacks %q: %.1000s", tt.want, out)
			}
		})
	}
}
