package clusterread

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/migranet/migranet/settings"
)

func TestServiceRanges(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	kubernetes := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.43.0.1", "fd00:43::1"}}}
	inside := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.1", "fd00:96::1"}}}
	cidr := func(name string, cidrs ...string) *networkingv1.ServiceCIDR {
		return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
	}
	noAPI := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*networkingv1.ServiceCIDRList); ok {
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "networking.k8s.io", Kind: "ServiceCIDR"}}
		}
		return c.List(ctx, list, opts...)
	}}
	denied := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("servicecidrs is forbidden")
	}}
	stuck := interceptor.Funcs{List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
		<-ctx.Done() // a cache whose informer never syncs
		return ctx.Err()
	}}
	tests := []struct {
		name    string
		objs    []client.Object
		funcs   interceptor.Funcs
		noAPI   bool // no API reader
		want    []string
		wantErr bool
	}{
		{name: "ServiceCIDRs holding the kubernetes Service", objs: []client.Object{cidr("kubernetes", "10.96.0.0/16", "fd00:96::/108"), cidr("extra", "10.97.0.0/24"), inside},
			want: []string{"10.97.0.0/24", "10.96.0.0/16", "fd00:96::/108"}},
		{name: "a kubernetes Service outside them", objs: []client.Object{cidr("kubernetes", "10.96.0.0/16"), kubernetes},
			want: []string{"10.96.0.0/16", "10.43.0.1/32", "fd00:43::1/128"}},
		{name: "ServiceCIDRs, no kubernetes Service", objs: []client.Object{cidr("kubernetes", "10.96.0.0/16")}, want: []string{"10.96.0.0/16"}},
		{name: "a bad entry is skipped", objs: []client.Object{cidr("kubernetes", "10.96.0.0/16", "nonsense"), inside}, want: []string{"10.96.0.0/16", "fd00:96::1/128"}},
		{name: "not served: the kubernetes Service's addresses", objs: []client.Object{kubernetes}, funcs: noAPI,
			want: []string{"10.43.0.1/32", "fd00:43::1/128"}},
		{name: "not served, no API reader", objs: []client.Object{kubernetes}, funcs: noAPI, noAPI: true},
		{name: "not served, no kubernetes Service", funcs: noAPI, wantErr: true},
		{name: "list refused", funcs: denied, wantErr: true},
		{name: "informer never syncs: gives up", funcs: stuck, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).WithInterceptorFuncs(tc.funcs).Build()
			var api client.Reader = c
			if tc.noAPI {
				api = nil
			}
			got, err := ServiceRanges(context.Background(), c, api)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if len(gotS) != len(tc.want) {
				t.Fatalf("got %v, want %v", gotS, tc.want)
			}
			for i := range gotS {
				if gotS[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", gotS, tc.want)
				}
			}
		})
	}
}

func TestVirtHandlerAddrs(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name, node string, labels map[string]string, ips ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		return p
	}
	handler := map[string]string{settings.VirtHandlerLabel: settings.VirtHandlerValue}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("kubevirt", "virt-handler-a", "node-1", handler, "10.244.0.7", "fd00:244::7"),
		pod("kubevirt", "virt-handler-b", "", handler), // not scheduled: no address yet
		pod("kubevirt", "virt-handler-c", "node-2", handler, "not-an-ip"),
		pod("kubevirt", "virt-api-x", "node-1", map[string]string{settings.VirtHandlerLabel: "virt-api"}, "10.244.0.8"),
		pod("other", "virt-handler-y", "node-1", handler, "10.244.0.9"),
	).Build()
	got, err := VirtHandlerAddrs(context.Background(), c, "kubevirt")
	if err != nil {
		t.Fatal(err)
	}
	want := []settings.PodAddr{{Pod: "virt-handler-a", Node: "node-1", Addr: netip.MustParseAddr("10.244.0.7")}, {Pod: "virt-handler-a", Node: "node-1", Addr: netip.MustParseAddr("fd00:244::7")}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	broken := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("pods is forbidden")
	}}).Build()
	if _, err := VirtHandlerAddrs(context.Background(), broken, "kubevirt"); err == nil {
		t.Fatal("a failed list gave no error")
	}
}

// The fault it catches: a read that failed judged as "nothing there" without a word, so the
// webhook would admit a range over the pod or Service network silently.
func TestOwnNetworksNamesWhatItMissed(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	refused := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("forbidden")
	}}).Build()
	_, _, missed := OwnNetworks(context.Background(), refused, nil, "kubevirt")
	if !strings.Contains(missed, "the cluster's Service ranges (listing ServiceCIDRs: forbidden)") || !strings.Contains(missed, "the virt-handlers' pod addresses") {
		t.Fatalf("missed %q", missed)
	}
	ok := fake.NewClientBuilder().WithScheme(scheme).Build()
	if _, _, missed := OwnNetworks(context.Background(), ok, nil, "kubevirt"); missed != "" {
		t.Fatalf("nothing failed, missed %q", missed)
	}
}
