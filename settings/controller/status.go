package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// writeStatus records, once per reconcile, the outcome of decision d: the network in force (the
// value's, status.source cleared, when migranet's value decides; else the source's mirror),
// status.writtenHash, the summary and Configured — d's, or the failing step's with the network
// in force before kept. An event marks each transition of Configured (status or reason) and each
// change of the network in force; a step failing again the same way emits nothing more.
func (r *Controller) writeStatus(ctx context.Context, s *v1beta1.Setting, eff settings.Effective, d decider.Decision, serr *stepError) error {
	cond := d.Configured
	fields := map[string]any{
		"source":         s.Status.Source,
		"appliedHash":    s.Status.AppliedHash,
		"appliedNetwork": s.Status.AppliedNetwork,
		"summary":        s.Status.Summary,
		"writtenHash":    s.Status.WrittenHash,
	}
	prefix := r.source().SummaryPrefix()
	switch {
	case serr != nil:
		cond = metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionFalse, Reason: serr.reason, Message: serr.Error()}
		if serr.reason == ReasonInvalidValue {
			fields["summary"] = "invalid"
		}
	case d.Own:
		fields["source"], fields["summary"] = nil, eff.Network.Summary()
		if !d.NotApplied {
			fields["appliedHash"], fields["appliedNetwork"] = eff.Hash, eff.NAD
		}
		if d.WrittenHash != "" {
			fields["writtenHash"] = d.WrittenHash
		}
	case d.Source != nil: // nil: the NAD in force is missing from the cache, the mirror kept
		src := d.Source
		_, name, _ := strings.Cut(src.NetworkAttachmentDefinition, "/")
		fields["source"], fields["appliedHash"], fields["appliedNetwork"] = src, settings.EffectiveOf(d.Network).Hash, name
		fields["summary"] = prefix + d.Network.Summary()
		if src.NotJudged != "" {
			fields["summary"] = prefix + "not judged: " + src.NetworkAttachmentDefinition
		}
		if d.Network != nil && cond.Status == metav1.ConditionTrue {
			if problems := r.rulesOn(ctx, src); problems != "" {
				cond.Message += "; but migranet's rules find: " + problems
			}
		}
	}
	if statuswrite.ConditionChanged(s.Status.Conditions, cond) || fields["appliedNetwork"] != s.Status.AppliedNetwork {
		eventType := corev1.EventTypeNormal
		if cond.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(s, eventType, cond.Reason, cond.Message)
	}
	err := statuswrite.ApplyStatus(ctx, r.Client, s, statuswrite.FieldManagerSettings, []metav1.Condition{cond}, fields)
	r.Metrics.Step(ControllerName, StepStatus, err)
	statuswrite.RecordWriteFailure(r.Recorder, s, statuswrite.FieldManagerSettings, err)
	return err
}
