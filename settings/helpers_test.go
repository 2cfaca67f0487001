package settings

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr describes an expected field error; detail lists substrings its Detail must contain.
type wantErr struct {
	typ    field.ErrorType
	field  string
	detail []string
}

func inv(f string, detail ...string) wantErr  { return wantErr{field.ErrorTypeInvalid, f, detail} }
func req(f string, detail ...string) wantErr  { return wantErr{field.ErrorTypeRequired, f, detail} }
func dup(f string, detail ...string) wantErr  { return wantErr{field.ErrorTypeDuplicate, f, detail} }
func typ(f string, detail ...string) wantErr  { return wantErr{field.ErrorTypeTypeInvalid, f, detail} }
func nsup(f string, detail ...string) wantErr { return wantErr{field.ErrorTypeNotSupported, f, detail} }

// checkErrs compares got with want as multisets of (type, field), then checks detail substrings.
func checkErrs(t *testing.T, got field.ErrorList, want []wantErr) {
	t.Helper()
	key := func(typ field.ErrorType, f string) string { return string(typ) + " " + f }
	gotKeys := make([]string, len(got))
	for i, e := range got {
		gotKeys[i] = key(e.Type, e.Field)
	}
	wantKeys := make([]string, len(want))
	for i, w := range want {
		wantKeys[i] = key(w.typ, w.field)
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if d := gocmp.Diff(wantKeys, gotKeys); d != "" {
		t.Fatalf("errors (-want +got):\n%s\nall errors:\n%s", d, dumpErrs(got))
	}
	sortedGot := slices.Clone(got)
	slices.SortStableFunc(sortedGot, func(a, b *field.Error) int {
		return cmp.Compare(key(a.Type, a.Field), key(b.Type, b.Field))
	})
	sortedWant := slices.Clone(want)
	slices.SortStableFunc(sortedWant, func(a, b wantErr) int {
		return cmp.Compare(key(a.typ, a.field), key(b.typ, b.field))
	})
	for i, w := range sortedWant {
		for _, sub := range w.detail {
			if !strings.Contains(sortedGot[i].Error(), sub) {
				t.Errorf("error %q does not contain %q", sortedGot[i].Error(), sub)
			}
		}
	}
}

func dumpErrs(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s [%s]\n", e.Error(), e.Type)
	}
	return b.String()
}

// node builds a Node with the given labels (alternating key, value).
func node(name string, kv ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Labels[kv[i]] = kv[i+1]
	}
	return n
}

// attached builds count nodes named prefix-NN carrying cluster network cn.
func attached(prefix, cn string, count int) []*corev1.Node {
	var out []*corev1.Node
	for i := range count {
		out = append(out, node(fmt.Sprintf("%s-%02d", prefix, i), ClusterNetworkLabelPrefix+cn, "true"))
	}
	return out
}

func mustParse(t testing.TB, raw string) *MigrationNetwork {
	t.Helper()
	m, errs := ParseMigrationNetwork(raw, field.NewPath("value"))
	if len(errs) > 0 || m == nil {
		t.Fatalf("parse %s: %v", raw, errs)
	}
	return m
}

// mustNetwork is raw's typed value; raw must pass every check of the value itself.
func mustNetwork(t testing.TB, raw string) *Network {
	t.Helper()
	n, errs, _ := ParseNetwork(raw, field.NewPath("value"))
	if len(errs) > 0 || n == nil {
		t.Fatalf("parse %s: %v", raw, errs)
	}
	return n
}
