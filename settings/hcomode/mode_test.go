package hcomode

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

func mapper(versions ...string) meta.RESTMapper {
	var gvs []schema.GroupVersion
	for _, v := range versions {
		gvs = append(gvs, schema.GroupVersion{Group: Group, Version: v})
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, v := range versions {
		m.Add(schema.GroupVersionKind{Group: Group, Version: v, Kind: Kind}, meta.RESTScopeNamespace)
	}
	return m
}

func TestDetect(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = kubevirtv1.AddToScheme(scheme)
	for _, tc := range []struct {
		name, mode string
		kv         *kubevirtv1.KubeVirt
		served     []string
		on         bool
		version    string
		err        string
		why        string
	}{
		{name: "auto, owned by HCO", mode: ModeAuto, kv: owned("hco.kubevirt.io/v1beta1", Kind, true), served: []string{V1beta1, V1}, on: true, version: V1beta1, why: "owned by HyperConverged"},
		{name: "auto, only v1 served", mode: ModeAuto, kv: owned("hco.kubevirt.io/v1", Kind, true), served: []string{V1}, on: true, version: V1},
		{name: "auto, not owned", mode: ModeAuto, kv: kubeVirt(""), served: []string{V1beta1}, on: false, why: "not managed by HCO"},
		{name: "auto, owned by another kind", mode: ModeAuto, kv: owned("example.com/v1", Kind, true), on: false},
		{name: "auto, no KubeVirt CR", mode: ModeAuto, on: false, why: "no KubeVirt CR"},
		{name: "off, even when owned", mode: ModeOff, kv: owned("hco.kubevirt.io/v1beta1", Kind, true), served: []string{V1beta1}, on: false},
		{name: "on without the CRD", mode: ModeOn, kv: kubeVirt(""), err: "does not serve hyperconvergeds.hco.kubevirt.io"},
		{name: "auto, owned, but the CRD is gone", mode: ModeAuto, kv: owned("hco.kubevirt.io/v1beta1", Kind, true), err: "does not serve"},
		{name: "on, no KubeVirt CR yet", mode: ModeOn, served: []string{V1beta1}, on: true, version: V1beta1, why: "no KubeVirt CR owned"},
		{name: "unknown mode", mode: "yes", err: `--hco="yes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			if tc.kv != nil {
				b = b.WithObjects(tc.kv)
			}
			m, err := Detect(context.Background(), tc.mode, b.Build(), mapper(tc.served...), ns)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.On != tc.on || m.Field.Version != tc.version || !strings.Contains(m.Why, tc.why) {
				t.Errorf("got %+v, want on=%v version=%q why~%q", m, tc.on, tc.version, tc.why)
			}
			if m.On && (m.HyperConverged.Namespace != ns || m.HyperConverged.Name != Name) {
				t.Errorf("HyperConverged %v", m.HyperConverged)
			}
		})
	}
}
