package clusterread

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/migranet/migranet/settings"
)

// TestKubeVirtCR decides zero and several KubeVirt CRs: none is nil, several is the oldest, then
// the first name, whatever the list order.
func TestKubeVirtCR(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	kv := func(name string, at metav1.Time) kubevirtv1.KubeVirt {
		return kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubevirt", CreationTimestamp: at}}
	}
	tests := []struct {
		name  string
		items []kubevirtv1.KubeVirt
		want  string
	}{
		{name: "none", want: ""},
		{name: "one", items: []kubevirtv1.KubeVirt{kv("kubevirt", t0)}, want: "kubevirt"},
		{name: "older second", items: []kubevirtv1.KubeVirt{kv("a", t1), kv("z", t0)}, want: "z"},
		{name: "older first", items: []kubevirtv1.KubeVirt{kv("z", t0), kv("a", t1)}, want: "z"},
		{name: "same time: first name", items: []kubevirtv1.KubeVirt{kv("b", t0), kv("a", t0), kv("c", t0)}, want: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := settings.OldestKubeVirt(tt.items)
			if name := nameOf(got); name != tt.want {
				t.Fatalf("OldestKubeVirt = %q, want %q", name, tt.want)
			}
			scheme := runtime.NewScheme()
			if err := kubevirtv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme)
			for i := range tt.items {
				b = b.WithObjects(&tt.items[i])
			}
			read, err := KubeVirtCR(context.Background(), b.Build(), "kubevirt")
			if err != nil || nameOf(read) != tt.want {
				t.Fatalf("KubeVirtCR = %q, %v; want %q", nameOf(read), err, tt.want)
			}
		})
	}
}

func nameOf(kv *kubevirtv1.KubeVirt) string {
	if kv == nil {
		return ""
	}
	return kv.Name
}
