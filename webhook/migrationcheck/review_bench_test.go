package migrationcheck_test

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
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
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
	st, create, cancel := migrationcheck.WorstCaseState()
	v := &webhook.MigrationValidator{State: st}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	create.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: checktest.VMIMKind.Kind}
	cancel.TypeMeta = create.TypeMeta
	bodies := [][]byte{checktest.Review(admissionv1.Create, checktest.VMIMKind, create.Name, create, nil), checktest.Review(admissionv1.Create, checktest.VMIMKind, create.Name, create, nil),
		checktest.Review(admissionv1.Create, checktest.VMIMKind, create.Name, create, nil), checktest.Review(admissionv1.Delete, checktest.VMIMKind, cancel.Name, nil, cancel)}
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
