package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// brokenReader fails every read, as a cache that cannot be read would.
type brokenReader struct{}

var errUnreadable = errors.New("cache unreadable")

func (brokenReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errUnreadable
}

func (brokenReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errUnreadable
}

// The fault caught: an internal error answered as a refusal (500) by a webhook whose
// failurePolicy is Ignore, which makes a cache problem stricter than an outage.
func TestIgnoreWebhooksFailOpen(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, webhook string
		call          func(v *MigrationValidator) ([]string, error)
	}{
		{"create", WebhookVMIMCreate, func(v *MigrationValidator) ([]string, error) {
			return v.ValidateCreate(ctx, vmim("mig", testVMI, ""))
		}},
		{"delete", WebhookVMIMDelete, func(v *MigrationValidator) ([]string, error) {
			return v.ValidateDelete(ctx, vmim("mig", testVMI, kubevirtv1.MigrationRunning))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, m, rec, _ := newTestValidator(t)
			v.State = &migrationcheck.APIState{Reader: brokenReader{}, KubeVirtNamespace: "kubevirt"}
			warnings, err := tc.call(v)
			if err != nil {
				t.Fatalf("refused on an internal error: %v", err)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "admitted it unchecked") || !strings.Contains(warnings[0], errUnreadable.Error()) {
				t.Errorf("warnings = %q, want one naming the unchecked admission and its cause", warnings)
			}
			if got := m.value(tc.webhook, RuleNone, ResultError); got != 1 {
				t.Errorf("%s none/error = %v, want 1", tc.webhook, got)
			}
			if got := m.value(tc.webhook, RuleNone, ResultAllowed); got != 0 {
				t.Errorf("%s none/allowed = %v, want 0: an unjudged request is not an allowed one", tc.webhook, got)
			}
			if e := drain(rec); len(e) != 0 {
				t.Errorf("events %q for an unjudged request", e)
			}
		})
	}
}

// The fault caught: the NAD webhook (failurePolicy Fail) failing open on an internal error,
// which would let the active migration network be deleted whenever its cache is unreadable.
func TestFailWebhooksFailClosed(t *testing.T) {
	v := &NADValidator{Reader: brokenReader{}, KubeVirtNamespace: "kubevirt"}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "vm-migration-network-0123456789",
		Labels: map[string]string{settings.LabelManagedBy: settings.ManagedBy}}}
	if _, err := v.ValidateDelete(context.Background(), nad); err == nil {
		t.Fatal("deleting a NAD was admitted although the cache could not be read")
	}
}
