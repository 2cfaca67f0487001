package main

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestMetricsReadFailure: the plan names missing RBAC only when RBAC refused the read. Seen on
// make dev: a 403 "resolve_deny: denied destination" from the way to a pod was reported as
// "needs get on pods/proxy" to an admin of system:masters, a grant that fixes nothing.
func TestMetricsReadFailure(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	rbac := apierrors.NewForbidden(pods, "virt-handler-x", errors.New(`User "viewer" cannot get resource "pods/proxy" in API group "" in the namespace "kubevirt"`))
	wayTo := apierrors.NewGenericServerResponse(403, "get", pods, "virt-handler-x", "resolve_deny: denied destination", 0, true)
	tests := []struct {
		name     string
		err      error
		timedOut bool
		want     string
	}{
		{name: "RBAC refused the proxy", err: rbac, want: "forbidden: needs get on pods/proxy in kubevirt"},
		{name: "near miss: a 403 on the way to the pod, not RBAC", err: wayTo, want: "refused (403) on the way to the pod, not by RBAC"},
		{name: "near miss: RBAC refused another resource", err: apierrors.NewForbidden(pods, "x", errors.New(`User "v" cannot get resource "pods" in API group ""`)),
			want: "refused (403) on the way to the pod, not by RBAC"},
		{name: "deadline", err: errors.New("context deadline exceeded"), timedOut: true, want: "no answer within"},
		{name: "other error, first line only", err: errors.New("connection refused\nsecond line"), want: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metricsReadFailure(tt.err, tt.timedOut, "kubevirt")
			if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "\n") {
				t.Errorf("got %q, want it to start with %q", got, tt.want)
			}
			if tt.err != rbac && strings.Contains(got, "needs get on pods/proxy") {
				t.Errorf("got %q: names RBAC for an error RBAC did not make", got)
			}
		})
	}
}
