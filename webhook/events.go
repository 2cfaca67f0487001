package webhook

import (
	"context"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// maxEventMessage bounds an event's message; the full refusal is in the create's answer.
const maxEventMessage = 1024

// recordRefusal leaves a Warning event on the VMI whose migration was refused, so that
// `kubectl describe vmi` shows why it did not move; annotated with the migration's name (a refused
// migration is never stored: no UID ties it, its time does). The recorder is asynchronous and aggregates
// repeats, so admission never waits for the write. Nothing is recorded without a VMI (a migration
// of a missing VMI has none to describe), for a dry-run request (which must have no side effects),
// or without a recorder.
func (v *MigrationValidator) recordRefusal(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, ds []migrationcheck.Decision) {
	if v.Recorder == nil || vmi == nil {
		return
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil && *req.DryRun {
		return
	}
	msg := RefusalMessage(vmim.Name, ds)
	if msg == "" {
		return
	}
	// A reference-only copy: the cached VMI is shared and must not reach another goroutine.
	ref := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, ResourceVersion: vmi.ResourceVersion,
	}}
	v.Recorder.AnnotatedEventf(ref, settings.MigrationEventAnnotations(vmim.Name, "", nil), corev1.EventTypeWarning,
		settings.ReasonMigrationRefused, "%s", msg)
}

// RefusalMessage summarises the denying decisions of migration name, naming each rule, e.g.
// "migration move-1 refused by migranet feasibleTarget: no node can receive ..." (several are
// joined with "; "), cut to at most maxEventMessage bytes; "" when nothing denied.
func RefusalMessage(name string, ds []migrationcheck.Decision) string {
	var parts []string
	for _, d := range ds {
		if d.Deny {
			parts = append(parts, string(d.Rule)+": "+d.Message)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return truncate("migration "+name+" refused by migranet "+strings.Join(parts, "; "), maxEventMessage)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
