package statuswrite

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
)

// ApplyStatus writes, with server-side apply under fieldManager, the given part of a Setting's
// status: the listed conditions (merged into the existing ones, so a transition time moves only
// when the status changes) and the top-level status fields in fields (JSON names). Each controller
// owns its own conditions and fields and never touches the others'. A field whose value is nil or
// "" is left out of the apply, which removes it. Nothing is written when the result equals what
// is stored.
func ApplyStatus(ctx context.Context, c client.Client, s *v1beta1.Setting, fieldManager string, conds []metav1.Condition, fields map[string]any) error {
	merged := append([]metav1.Condition(nil), s.Status.Conditions...)
	owned := make([]metav1.Condition, 0, len(conds))
	for _, cond := range conds {
		cond.ObservedGeneration = s.Generation
		meta.SetStatusCondition(&merged, cond)
		owned = append(owned, *meta.FindStatusCondition(merged, cond.Type))
	}
	if unchanged(s, merged, fields) {
		return nil
	}
	// Through JSON, so the unstructured object holds only JSON types and a typed nil (a nil
	// *NetworkSource in fields) is dropped like an untyped one: the CRD's objects are not nullable.
	status, err := jsonFields(fields)
	if err != nil {
		return err
	}
	status["conditions"] = owned
	if status, err = jsonRoundTrip(status); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(),
		"kind":       "Setting",
		"metadata":   map[string]any{"name": s.Name},
		"status":     status,
	}}
	return c.Status().Patch(ctx, u, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership)
}

// unchanged reports whether the stored status already has the merged conditions and fields.
func unchanged(s *v1beta1.Setting, merged []metav1.Condition, fields map[string]any) bool {
	if !equality.Semantic.DeepEqual(merged, s.Status.Conditions) {
		return false
	}
	raw, err := json.Marshal(s.Status)
	if err != nil {
		return false
	}
	var stored map[string]any
	if err := json.Unmarshal(raw, &stored); err != nil {
		return false
	}
	wantMap, err := jsonRoundTrip(fields)
	if err != nil {
		return false
	}
	for k, v := range wantMap {
		if isZero(v) && isZero(stored[k]) {
			continue
		}
		if !equality.Semantic.DeepEqual(stored[k], v) {
			return false
		}
	}
	return true
}

func isZero(v any) bool { return v == nil || v == "" }

// jsonFields is fields as JSON types, without the zero ones (nil, typed or not, and "").
func jsonFields(fields map[string]any) (map[string]any, error) {
	m, err := jsonRoundTrip(fields)
	if err != nil {
		return nil, err
	}
	for k, v := range m {
		if isZero(v) {
			delete(m, k)
		}
	}
	return m, nil
}

func jsonRoundTrip(v map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil { // v was nil: "null"
		m = map[string]any{}
	}
	return m, nil
}

// ReasonWriteFailed is the reason of the Warning event RecordWriteFailure records.
const ReasonWriteFailed = "StatusWriteFailed"

// RecordWriteFailure records on s a Warning event saying that writer (a field manager) could not
// write its part of the status and why, so kubectl describe tells that the status shown is stale
// (the step counter counts the failure as well). The recorder aggregates repeats: a write refused
// on every retry is one event with a count. The message is cut at 1 KiB.
func RecordWriteFailure(rec record.EventRecorder, s *v1beta1.Setting, writer string, err error) {
	if rec == nil || err == nil {
		return
	}
	msg := fmt.Sprintf("%s could not write this setting's status, which still shows an earlier state: %v", writer, err)
	if r := []rune(msg); len(r) > 1024 {
		msg = string(r[:1021]) + "..."
	}
	rec.Event(s, corev1.EventTypeWarning, ReasonWriteFailed, msg)
}

// ConditionChanged reports whether cond differs in status or reason from the condition of its
// type in stored, or stored has none: the transitions worth an event.
func ConditionChanged(stored []metav1.Condition, cond metav1.Condition) bool {
	old := meta.FindStatusCondition(stored, cond.Type)
	return old == nil || old.Status != cond.Status || old.Reason != cond.Reason
}

// The field managers of migranet's writers: each owns its own part of a Setting's status (and the
// guard's parameter). The manager names its event recorders after them too, so an event's source
// says which writer recorded it.
const (
	FieldManagerSettings = "migranet-settings"
	FieldManagerPolicy   = "migranet-policy"
	FieldManagerNetwork  = "migranet-netcontroller"
	FieldManagerGuard    = "migranet-guard"
	// FieldManagerRanges writes status.ranges, the settings controller's record of the ranges
	// its NADs used, before each new range's NAD exists (apart from its Configured write).
	FieldManagerRanges = "migranet-ranges"
	// FieldManagerPaths writes the Healthy condition and status.paths from the probe agents' reports.
	FieldManagerPaths = "migranet-paths"
)

// WouldChange reports whether ApplyStatus with these arguments would write: whether the merged
// conditions or the fields differ from what s stores. A writer that spaces its writes out asks it
// first.
func WouldChange(s *v1beta1.Setting, conds []metav1.Condition, fields map[string]any) bool {
	merged := append([]metav1.Condition(nil), s.Status.Conditions...)
	for _, cond := range conds {
		cond.ObservedGeneration = s.Generation
		meta.SetStatusCondition(&merged, cond)
	}
	return !unchanged(s, merged, fields)
}
