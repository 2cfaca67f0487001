package netcontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

const valueA = `{"clusterNetwork":"migration","range":"192.168.100.0/24"}`

func parse(t *testing.T, value string) *settings.Network {
	t.Helper()
	m, _, _ := settings.ParseNetwork(value, field.NewPath("value"))
	if value != "" && value != "{" && m == nil {
		t.Fatalf("value %q did not parse", value)
	}
	if value == "{" {
		return nil
	}
	return m
}

// hashA is valueA's hash, computed outside migranet:
// printf '%s' '{"clusterNetwork":"migration","vlan":0,"range":"192.168.100.0/24"}' | sha256sum
const hashA = "5cf7ae62aa47207da4eda9a3526362c59fa6149796fe40c40856bb7c48f110bc"

func kubeVirt(status, reason string) *kubevirtv1.KubeVirt {
	return &kubevirtv1.KubeVirt{Status: kubevirtv1.KubeVirtStatus{Conditions: []kubevirtv1.KubeVirtCondition{{
		Type: kubevirtv1.KubeVirtConditionAvailable, Status: corev1.ConditionStatus(status), Reason: reason,
	}}}}
}
