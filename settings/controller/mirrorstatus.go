package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// mirrorWrite is who writes a mirror's status: the client, the event recorder, the step metrics
// and the controller's name in them.
type mirrorWrite struct {
	client   client.Client
	recorder record.EventRecorder
	metrics  *statuswrite.Metrics
	name     string
}

// writeMirrorStatus writes the status of a setting whose network another object decides (Harvester
// mode's setting, HCO mode's HyperConverged CR): status.source, the applied hash and NAD of the
// network in force, the summary (prefix + the network's), Configured, and extra fields of the
// settings field manager; an event on each change of Configured or of the NAD in force. A nil
// source keeps the stored source and network (the NAD in force cannot be read now).
func writeMirrorStatus(ctx context.Context, w mirrorWrite, s *v1beta1.Setting, source *v1beta1.NetworkSource, n *settings.Network,
	configured metav1.Condition, prefix string, extra map[string]any) error {
	fields := map[string]any{
		"source":         source,
		"appliedHash":    s.Status.AppliedHash,
		"appliedNetwork": s.Status.AppliedNetwork,
		"summary":        s.Status.Summary,
	}
	for k, v := range extra {
		fields[k] = v
	}
	switch {
	case source == nil:
		fields["source"] = s.Status.Source
	default: // n nil: the pod network, no hash

		fields["appliedHash"], fields["summary"] = settings.EffectiveOf(n).Hash, prefix+n.Summary()
		_, fields["appliedNetwork"], _ = strings.Cut(source.NetworkAttachmentDefinition, "/")
	}
	if statuswrite.ConditionChanged(s.Status.Conditions, configured) || fields["appliedNetwork"] != s.Status.AppliedNetwork {
		eventType := corev1.EventTypeNormal
		if configured.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		w.recorder.Event(s, eventType, configured.Reason, configured.Message)
	}
	err := statuswrite.ApplyStatus(ctx, w.client, s, statuswrite.FieldManagerSettings, []metav1.Condition{configured}, fields)
	w.metrics.Step(w.name, StepStatus, err)
	statuswrite.RecordWriteFailure(w.recorder, s, statuswrite.FieldManagerSettings, err)
	return err
}
