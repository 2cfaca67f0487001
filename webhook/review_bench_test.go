package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/netcontroller"
)

// admitAll is the no-op validator make bench measures migranet's against.
type admitAll struct{}

func (admitAll) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (admitAll) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (admitAll) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// BenchmarkReviewWorstCase serves make bench's hard case (worstCase) through controller-runtime's
// admission handler, decoding and encoding included, against a no-op validator served the same
// way: the server side of a review without the machine's noise. Each iteration is three creates
// and one cancel of an in-flight pre-copy migration, as in make bench.
func BenchmarkReviewWorstCase(b *testing.B) {
	in := worstCase()
	vmis := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	vmims := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{vmimByVMI: func(obj any) ([]string, error) {
		m := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
		return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
	}})
	in.VMI.Status.Phase = kubevirtv1.Running
	_ = vmis.Add(in.VMI)
	running := vmi("node-0010", nil)
	running.Name = "running"
	running.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "node-0010",
		MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Mode: kubevirtv1.MigrationPreCopy, SourceNode: "node-0010", TargetNode: "node-0999"}}
	_ = vmis.Add(running)
	inflight := vmim("old", "running", kubevirtv1.MigrationRunning)
	_ = vmims.Add(inflight)
	st := &nodeState{nodes: in.Nodes, index: in.index}
	snap := *readySnapshot()
	v := &MigrationValidator{KubeVirtNamespace: "kubevirt", Snapshots: netcontroller.NewStore(&snap), Pods: in.Pods,
		nodeState: func() *nodeState { return st }, stores: &lookup{vmis: vmis, vmims: vmims},
		kubeVirt:     func(context.Context) (*kubeVirtView, error) { return &kubeVirtView{kv: in.KubeVirt}, nil },
		settingsView: func(context.Context) (*settingsView, error) { return &settingsView{hash: testHash}, nil }}
	scheme, err := NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	create := in.VMIM.DeepCopy()
	create.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: vmimGVK.Kind}
	cancel := inflight.DeepCopy()
	cancel.TypeMeta = create.TypeMeta
	bodies := [][]byte{review(admissionv1.Create, vmimGVK, create.Name, create, nil), review(admissionv1.Create, vmimGVK, create.Name, create, nil),
		review(admissionv1.Create, vmimGVK, create.Name, create, nil), review(admissionv1.Delete, vmimGVK, cancel.Name, nil, cancel)}
	for _, c := range []struct {
		name string
		v    admission.CustomValidator
	}{{"no-op", admitAll{}}, {"migranet", v}} {
		h := admission.WithCustomValidator(scheme, &kubevirtv1.VirtualMachineInstanceMigration{}, c.v)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, body := range bodies {
					req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if !strings.Contains(w.Body.String(), `"allowed":true`) {
						b.Fatalf("%s: %s", c.name, w.Body.String())
					}
				}
			}
		})
	}
}
