package statuswrite

import (
	"slices"
	"testing"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestJSONFields: the fields an apply sends are JSON types without the zero ones, a typed nil
// pointer included. Catches: a nil *NetworkSource sent as "source": null, which the CRD refuses
// (status.source must be an object), so every status write of a failing step was refused and the
// setting kept describing an older generation (seen: Configured never said KubeVirtUpdateFailed).
func TestJSONFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		kept  bool
	}{
		{"untyped nil", nil, false},
		{"typed nil pointer", (*v1beta1.NetworkSource)(nil), false},
		{"nil slice", []string(nil), false},
		{"empty string", "", false},
		{"a source", &v1beta1.NetworkSource{Setting: "harvesterhci.io/vm-migration-network"}, true},
		{"an empty source object", &v1beta1.NetworkSource{}, true},
		{"a string", "vm-migration-network-1a2b", true},
		{"an empty slice", []string{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jsonFields(map[string]any{"f": tc.value, "other": "x"})
			if err != nil {
				t.Fatal(err)
			}
			_, kept := got["f"]
			if kept != tc.kept || got["other"] != "x" {
				t.Errorf("jsonFields(%#v) = %v; want f kept=%v and other kept", tc.value, got, tc.kept)
			}
			if kept && slices.Contains([]any{nil}, got["f"]) {
				t.Errorf("f kept as null: %v", got)
			}
		})
	}
	// The near miss of the typed nil: no fields at all (a writer of conditions only) is an empty
	// object the caller adds conditions to, not a nil map (seen: every replica panicking in its
	// offenders scan).
	for _, fields := range []map[string]any{nil, {}} {
		got, err := jsonFields(fields)
		if err != nil || got == nil {
			t.Fatalf("jsonFields(%#v) = %#v, %v; want an empty map", fields, got, err)
		}
		got["conditions"] = "writable"
	}
}
