package decider

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestOwnDecide: on a plain KubeVirt migranet's value decides and the KubeVirt CR's one field is
// written only when it differs. Near misses: the CR naming the NAD already (no write), the empty
// value over a CR that names a NAD (a write that removes it), no CR (nothing applied).
func TestOwnDecide(t *testing.T) {
	a, off := own(t, ownValue), own(t, "")
	kvOn := func(network string) *kubevirtv1.KubeVirt { k := kubeVirt(network); return k }
	for _, tc := range []struct {
		name       string
		in         Observed
		patch      string // "" wants no write
		reason     string
		status     metav1.ConditionStatus
		notApplied bool
	}{
		{name: "a value, the CR names nothing", in: Observed{Own: a, KubeVirt: kvOn("")},
			patch: `{"spec":{"configuration":{"migrations":{"network":"` + a.NAD + `"}}}}`, reason: ReasonApplied, status: metav1.ConditionTrue},
		{name: "a value, the CR names another NAD", in: Observed{Own: a, KubeVirt: kvOn("their-mig")},
			patch: `{"spec":{"configuration":{"migrations":{"network":"` + a.NAD + `"}}}}`, reason: ReasonApplied, status: metav1.ConditionTrue},
		{name: "a value already in force", in: Observed{Own: a, KubeVirt: kvOn(a.NAD)}, reason: ReasonApplied, status: metav1.ConditionTrue},
		{name: "empty value, the CR names a NAD", in: Observed{Own: off, KubeVirt: kvOn(a.NAD)},
			patch: `{"spec":{"configuration":{"migrations":{"network":null}}}}`, reason: ReasonDisabled, status: metav1.ConditionTrue},
		{name: "empty value, the CR names nothing", in: Observed{Own: off, KubeVirt: kvOn("")}, reason: ReasonDisabled, status: metav1.ConditionTrue},
		{name: "no KubeVirt CR", in: Observed{Own: a}, reason: ReasonKubeVirtNotFound, status: metav1.ConditionFalse, notApplied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Own{Namespace: hcoNS}.Decide(tc.in)
			if !d.Own || d.RenderOwn || d.Source != nil || d.NotApplied != tc.notApplied {
				t.Errorf("decision %+v, want own, no source, notApplied %v", d, tc.notApplied)
			}
			got := ""
			if d.Point != nil {
				got = string(d.Point.Patch)
				if d.Point.Object != tc.in.KubeVirt || d.Point.Network != tc.in.Own.NAD {
					t.Errorf("point %+v, want the KubeVirt CR set to %q", d.Point, tc.in.Own.NAD)
				}
			}
			if got != tc.patch {
				t.Errorf("patch %s, want %s", got, tc.patch)
			}
			if d.Configured.Reason != tc.reason || d.Configured.Status != tc.status || d.Configured.Type != v1beta1.ConditionConfigured {
				t.Errorf("Configured %+v, want %s %s", d.Configured, tc.status, tc.reason)
			}
		})
	}
}
