package release

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// TestKubeVirtVersionIsNotJudged backs docs/install.md's skew table: migranet neither warns nor
// refuses because of KubeVirt's version; rule kubevirtReady (and the network controller's Ready)
// reads the KubeVirt CR's Available condition alone, for an older (v1.7.0), the tested (v1.8.4), the
// built-against (v1.9.0) and a newer (v1.10.0) KubeVirt alike. The fault it catches is a version
// gate added (a minimum or maximum KubeVirt version refused, or judged from
// observedKubeVirtVersion) without the skew table saying so.
func TestKubeVirtVersionIsNotJudged(t *testing.T) {
	cr := func(version string, status corev1.ConditionStatus, reason string) *kubevirtv1.KubeVirt {
		kv := &kubevirtv1.KubeVirt{}
		kv.Status.ObservedKubeVirtVersion, kv.Status.TargetKubeVirtVersion = version, version
		kv.Status.Conditions = []kubevirtv1.KubeVirtCondition{{Type: kubevirtv1.KubeVirtConditionAvailable, Status: status, Reason: reason}}
		return kv
	}
	for _, version := range []string{"v1.7.0", "v1.8.4", "v1.9.0", "v1.10.0", ""} {
		if ok, why := settings.KubeVirtReady(cr(version, corev1.ConditionTrue, settings.KubeVirtReadyReason)); !ok {
			t.Errorf("KubeVirt %q Available/AllComponentsReady: not ready (%s)", version, why)
		}
		if ok, _ := settings.KubeVirtReady(cr(version, corev1.ConditionTrue, "UpdateInProgress")); ok {
			t.Errorf("KubeVirt %q Available/UpdateInProgress: ready", version)
		}
		if ok, _ := settings.KubeVirtReady(cr(version, corev1.ConditionFalse, "DeploymentInProgress")); ok {
			t.Errorf("KubeVirt %q Available=False: ready", version)
		}
	}
}
