package hcomode

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func owned(apiVersion, kind string, controller bool) *kubevirtv1.KubeVirt {
	kv := kubeVirt("")
	kv.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: Name, UID: "u", Controller: ptr.To(controller)}}
	return kv
}

func TestHyperConvergedOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   *kubevirtv1.KubeVirt
		want bool
	}{
		{"HCO's controller reference", owned("hco.kubevirt.io/v1beta1", Kind, true), true},
		{"v1 API", owned("hco.kubevirt.io/v1", Kind, true), true},
		{"owned but not as controller", owned("hco.kubevirt.io/v1beta1", Kind, false), false},
		{"a HyperConverged of another group", owned("example.com/v1", Kind, true), false},
		{"another kind of HCO's group", owned("hco.kubevirt.io/v1beta1", "SSP", true), false},
		{"no owner", kubeVirt(""), false},
		{"no KubeVirt CR", nil, false},
	} {
		if got := HyperConvergedOwner(tc.kv) != nil; got != tc.want {
			t.Errorf("%s: owner found %v, want %v", tc.name, got, tc.want)
		}
	}
}
