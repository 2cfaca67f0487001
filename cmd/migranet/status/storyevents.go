package status

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
)

// Kinds of the objects a story's events are about.
const (
	kindVMIM = "VirtualMachineInstanceMigration"
	kindVMI  = "VirtualMachineInstance"
)

// Identify names the migration a story tells, from its VMIM while it exists, else from the
// events: the UID whose events were seen last (an earlier migration of the same name is another),
// and the VMI of that migration (or of the refusal, when a refusal is the story: refusal).
// cmd/migranet calls it before it reads the VMI and the target pod.
func (s *Story) Identify() {
	if s.VMIM != nil {
		s.UID, s.VMIName = s.VMIM.UID, s.VMIM.Spec.VMIName
		return
	}
	var latest time.Time
	for _, e := range s.Events {
		if uid := s.migrationUIDOf(e); uid != "" && (s.UID == "" || eventTime(e).After(latest)) {
			s.UID, latest = uid, eventTime(e)
		}
	}
	if s.VMIName != "" {
		return
	}
	if r := s.refusal(); r != nil {
		s.VMIName = r.InvolvedObject.Name
		return
	}
	for _, e := range s.Events {
		if e.InvolvedObject.Kind == kindVMI && s.UID != "" && types.UID(e.Annotations[settings.AnnotationMigrationUID]) == s.UID {
			s.VMIName = e.InvolvedObject.Name
			return
		}
	}
}

// migrationUIDOf is the UID of the migration named s.Name that e is about, "" when it is about
// none (or names no UID): the involvedObject of an event on the migration, the annotation of one
// migranet left on its VMI.
func (s Story) migrationUIDOf(e corev1.Event) types.UID {
	if e.Namespace != s.Namespace {
		return ""
	}
	switch e.InvolvedObject.Kind {
	case kindVMIM:
		if e.InvolvedObject.Name == s.Name {
			return e.InvolvedObject.UID
		}
	case kindVMI:
		if e.Annotations[settings.AnnotationMigration] == s.Name {
			return types.UID(e.Annotations[settings.AnnotationMigrationUID])
		}
	}
	return ""
}

// created is when this migration was created: its VMIM's creation, else the first sighting of any
// event about its UID; zero when unknown.
func (s Story) created() time.Time {
	if s.VMIM != nil {
		return s.VMIM.CreationTimestamp.Time
	}
	var first time.Time
	for _, e := range s.Events {
		if s.UID != "" && s.migrationUIDOf(e) == s.UID && (first.IsZero() || eventFirst(e).Before(first)) {
			first = eventFirst(e)
		}
	}
	return first
}

// refusal is the refusal event that tells this story, nil when the story is of an admitted
// migration. A refused migration is never stored, so no UID ties it: time does. While its VMIM
// exists the migration was admitted, and every refusal of its name is another attempt's (an older
// one, or a create of the same name that failed meanwhile). Once it is gone, the latest refusal of
// the name is the story only when seen after the admitted migration of that name was created (its
// first event): one from the same second or before is an earlier attempt's.
func (s Story) refusal() *corev1.Event {
	if s.VMIM != nil {
		return nil
	}
	var out *corev1.Event
	for i := range s.Events {
		e := &s.Events[i]
		if e.Reason != settings.ReasonMigrationRefused || e.Namespace != s.Namespace || e.InvolvedObject.Kind != kindVMI || !refuses(*e, s.Name) {
			continue
		}
		if out == nil || eventTime(*e).After(eventTime(*out)) {
			out = e
		}
	}
	if out == nil || s.UID == "" || eventTime(*out).After(s.created()) {
		return out
	}
	return nil
}

// refuses reports whether refusal event e is about a migration named name: its annotation, or
// (events recorded before the annotation was) its message's start.
func refuses(e corev1.Event, name string) bool {
	if n, ok := e.Annotations[settings.AnnotationMigration]; ok {
		return n == name
	}
	return strings.HasPrefix(e.Message, settings.MigrationSubject(name, "")+" refused")
}

// namesMigration reports whether e, an event migranet left on a VMI, is about migration name
// with uid, created at created: by its annotations (settings.MigrationEventAnnotations). An event
// without a UID (recorded before it carried one) counts when seen no earlier than the creation
// second, so an older migration of that name lends it nothing.
func namesMigration(e corev1.Event, name string, uid types.UID, created time.Time) bool {
	if e.Annotations[settings.AnnotationMigration] != name {
		return false
	}
	if got := types.UID(e.Annotations[settings.AnnotationMigrationUID]); got != "" {
		return got == uid
	}
	return !eventTime(e).Before(created)
}

// onMigration reports whether e, an event on a migration object, is about the migration name
// with uid, created at created: by involvedObject, its UID when it has one, else its time.
func onMigration(e corev1.Event, name string, uid types.UID, created time.Time) bool {
	if e.InvolvedObject.Kind != kindVMIM || e.InvolvedObject.Name != name {
		return false
	}
	if e.InvolvedObject.UID != "" && uid != "" {
		return e.InvolvedObject.UID == uid
	}
	return !eventTime(e).Before(created)
}

// about reports whether ev concerns this migration (refusals: refusal).
func (s Story) about(ev *corev1.Event) bool {
	switch ev.InvolvedObject.Kind {
	case kindVMIM:
		return s.UID != "" && onMigration(*ev, s.Name, s.UID, s.created())
	case kindVMI:
		return ev.InvolvedObject.Name == s.VMIName && ev.Reason != settings.ReasonMigrationRefused &&
			namesMigration(*ev, s.Name, s.UID, s.created())
	case "Pod":
		return s.TargetPod != nil && ev.InvolvedObject.Name == s.TargetPod.Name
	}
	return false
}

// event is the latest event of reason about this migration; kind "" takes any object's.
func (s Story) event(reason, kind string) *corev1.Event {
	var out *corev1.Event
	for i := range s.Events {
		ev := &s.Events[i]
		if ev.Reason != reason || ev.Namespace != s.Namespace || (kind != "" && ev.InvolvedObject.Kind != kind) || !s.about(ev) {
			continue
		}
		if out == nil || eventTime(*ev).After(eventTime(*out)) {
			out = ev
		}
	}
	return out
}

// message is what the latest event of reason about this migration says: the one on the migration,
// else the one on its VMI without the migration's name in front (settings.MigrationSubject); the
// event, nil when there is none.
func (s Story) message(reason string) (string, *corev1.Event) {
	if ev := s.event(reason, kindVMIM); ev != nil {
		return ev.Message, ev
	}
	if ev := s.event(reason, kindVMI); ev != nil {
		return strings.TrimPrefix(ev.Message, settings.MigrationSubject(s.Name, s.UID)+": "), ev
	}
	return "", nil
}

// abortReason is why migranet aborted this migration, "" when it did not: the annotation of its
// VMIM being deleted (health.AbortedBy), else the abort's event.
func (s Story) abortReason() string {
	if why := health.AbortedBy(s.VMIM); why != "" {
		return why
	}
	why, _ := s.message(health.ReasonMigrationPathBroken)
	return why
}

// MigrationState is this migration's state (see state).
func (s Story) MigrationState() *kubevirtv1.VirtualMachineInstanceMigrationState {
	ms, _ := s.state()
	return ms
}

// state is this migration's state: the VMI's while it names the migration's UID (also once the
// VMIM is gone), else the VMIM's own copy, else the one migranet recorded on its latest event about
// the migration (settings.AnnotationMigrationState: the path-abort controller's), returned with
// that event. The last is all that is left once the VMIM is gone and the VMI has moved on to
// another migration (a drain creates the next one right after an abort), for as long as events
// live.
func (s Story) state() (*kubevirtv1.VirtualMachineInstanceMigrationState, *corev1.Event) {
	if s.VMI != nil && s.VMI.Status.MigrationState != nil && s.UID != "" && s.VMI.Status.MigrationState.MigrationUID == s.UID {
		return s.VMI.Status.MigrationState, nil
	}
	if s.VMIM != nil {
		if ms := migrationState(s.VMIM, s.VMI); ms != nil {
			return ms, nil
		}
	}
	var rec *corev1.Event
	for _, reason := range []string{health.ReasonMigrationPathBroken, health.ReasonMigrationPathFailing} {
		if _, ev := s.message(reason); ev != nil && settings.RecordedMigrationState(ev.Annotations) != nil {
			rec = ev
			break
		}
	}
	if rec == nil {
		return nil, nil
	}
	return settings.RecordedMigrationState(rec.Annotations), rec
}

// eventFirst is when the event was first seen.
func eventFirst(e corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.LastTimestamp.Time
}
