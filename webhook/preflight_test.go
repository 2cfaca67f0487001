package webhook

import (
	"context"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/webhook/migrationcheck"
)

// TestPreflightMatchesValidateCreate: Preflight answers with ValidateCreate's words.
func TestPreflightMatchesValidateCreate(t *testing.T) {
	v, _, _, _ := newTestValidator(t)
	ctx := context.Background()
	for _, name := range []string{testVMI, "pinned", "missing"} {
		m := vmim("move-"+name, name, "")
		p, err := migrationcheck.Preflight(ctx, v.State, m, "alice")
		if err != nil {
			t.Fatal(err)
		}
		warnings, refusal := v.ValidateCreate(admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UserInfo: authenticationv1.UserInfo{Username: "alice"}}}), m)
		if p.Admitted != (refusal == nil) || (refusal != nil && p.Refusal != refusal.Error()) || !gocmp.Equal([]string(warnings), p.Warnings, cmpEmpty) {
			t.Errorf("%s: preflight %+v, webhook warnings %v refusal %v", name, p, warnings, refusal)
		}
		if (name == "missing") != (p.Nodes == nil) {
			t.Errorf("%s: nodes %+v", name, p.Nodes)
		}
	}
}

var cmpEmpty = gocmp.Comparer(func(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") })
