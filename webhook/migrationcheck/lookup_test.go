package migrationcheck

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestConfirmedVMI: a VMI the store does not hold yet is read from the API before the vmiState
// rule calls it absent (the CI failure: a Running VMI refused as "not found"); what the store
// holds is never read again, and a VMI of the same name in another namespace is no answer.
func TestConfirmedVMI(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kubevirtv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	vmi := func(ns, name, node string) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: node}}
	}
	var gets int
	counting := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		gets++
		return c.Get(ctx, key, obj, opts...)
	}}
	failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		gets++
		return errors.New("connection refused")
	}}
	stuck := interceptor.Funcs{Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
		gets++
		<-ctx.Done() // an API server that never answers
		return ctx.Err()
	}}
	tests := []struct {
		name     string
		store    []*kubevirtv1.VirtualMachineInstance
		api      []client.Object
		funcs    interceptor.Funcs
		noAPI    bool
		vmiName  string
		wantNode string // "" : nil VMI
		wantGets int
	}{
		{name: "in the store: no API read", store: []*kubevirtv1.VirtualMachineInstance{vmi("ns", "a", "store")},
			api: []client.Object{vmi("ns", "a", "api")}, funcs: counting, vmiName: "a", wantNode: "store"},
		{name: "not yet in the store, in the API", api: []client.Object{vmi("ns", "a", "api")}, funcs: counting,
			vmiName: "a", wantNode: "api", wantGets: 1},
		{name: "near miss: the same name in another namespace is absent", store: []*kubevirtv1.VirtualMachineInstance{vmi("other", "a", "store")},
			api: []client.Object{vmi("other", "a", "api")}, funcs: counting, vmiName: "a", wantGets: 1},
		{name: "absent from both", funcs: counting, vmiName: "a", wantGets: 1},
		{name: "no API reader: the store's miss stands", api: []client.Object{vmi("ns", "a", "api")}, noAPI: true, vmiName: "a"},
		{name: "no name: nothing to read", funcs: counting, vmiName: ""},
		{name: "the API read fails: the store's miss stands", funcs: failing, vmiName: "a", wantGets: 1},
		{name: "the API never answers: the store's miss stands once the read's deadline passes", funcs: stuck, vmiName: "a", wantGets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets = 0
			store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
			for _, v := range tt.store {
				if err := store.Add(v); err != nil {
					t.Fatal(err)
				}
			}
			var api client.Reader
			if !tt.noAPI {
				api = fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.api...).WithInterceptorFuncs(tt.funcs).Build()
			}
			// The review's own context outlives the read's bound: the read must end first.
			ctx, cancel := context.WithTimeout(context.Background(), 4*confirmTimeout)
			defer cancel()
			start := time.Now()
			got, err := (&lookup{vmis: store}).confirmedVMI(ctx, api, "ns", tt.vmiName)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 2*confirmTimeout {
				t.Errorf("the read took %s: not bounded by confirmTimeout (%s)", took, confirmTimeout)
			}
			gotNode := ""
			if got != nil {
				gotNode = got.Status.NodeName
			}
			if gotNode != tt.wantNode || gets != tt.wantGets {
				t.Errorf("VMI from %q with %d API reads, want %q with %d", gotNode, gets, tt.wantNode, tt.wantGets)
			}
		})
	}
}
