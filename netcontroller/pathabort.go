package netcontroller

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list;watch;patch;delete

// PathAbortControllerName names the path-abort controller (and its events' source).
const PathAbortControllerName = "pathabort"

// PathAbort is the leader's runningPathHealthy rule: it aborts, as an admin does (`virtctl
// migrate-cancel` deletes the VMIM; virt-controller then asks the source's virt-handler to abort),
// every streaming pre-copy migration whose path between its source and target the probe agents
// report failing in a round that started after it began (health.DecideAbort). Only once the
// delete succeeded does it record a Warning event on the VMIM and on its VMI naming the pair and
// what failed, then annotate the VMIM with the reason (health.AbortedAnnotation): a delete that
// fails, for whatever reason, leaves no trace that would call the migration aborted. At warn it
// records the events only.
//
// It reads caches only: the VMIs (their status.migrationState), the VMIMs, the migration-policy
// setting and the health the PathObserver publishes. It runs again on any change of a VMI's
// migration state or of a VMIM and after every publish of the health (the observer's Published
// channel: the health it then reads is at least as new as the reports that woke it). Every
// trigger is coalesced on one key: one pass lists the cached VMIs once (a pointer walk; 10,000
// VMIs cost well under a millisecond) and judges those that stream.
type PathAbort struct {
	Client            client.Client
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	// Paths is the store the PathObserver publishes into; Published its Published channel.
	Paths     *health.PathStore
	Published chan event.GenericEvent
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// warned holds the migrations (by UID) a warning was recorded for, so that each gets one.
	warned map[types.UID]bool
}

// pathAbortKey is the one key every trigger enqueues.
var pathAbortKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "running-migrations"}}

// SetupWithManager runs the controller on the leader only.
func (a *PathAbort) SetupWithManager(mgr ctrl.Manager) error {
	a.warned = map[types.UID]bool{}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{pathAbortKey}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named(PathAbortControllerName).
		WatchesRawSource(source.Kind(mgr.GetCache(), client.Object(&kubevirtv1.VirtualMachineInstance{}), all,
			predicate.NewPredicateFuncs(func(o client.Object) bool {
				vmi, ok := o.(*kubevirtv1.VirtualMachineInstance)
				return ok && vmi.Status.MigrationState != nil
			}))).
		Watches(&kubevirtv1.VirtualMachineInstanceMigration{}, all).
		Watches(&v1beta1.Setting{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == v1beta1.MigrationPolicy
		})))
	if a.Published != nil {
		b = b.WatchesRawSource(source.Channel(a.Published, all))
	}
	return b.Complete(a)
}

// Reconcile judges every streaming migration once.
func (a *PathAbort) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	policy, err := a.policy(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	vmis := &kubevirtv1.VirtualMachineInstanceList{}
	if err := a.Client.List(ctx, vmis, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	h, now := a.Paths.Load(), a.now()
	streaming := map[types.UID]bool{}
	var errs []error
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		ms := vmi.Status.MigrationState
		if ms == nil || ms.Completed || ms.Failed || ms.StartTimestamp == nil {
			continue
		}
		streaming[ms.MigrationUID] = true
		// Judge with the strictest mode first: only a migration whose path fails needs its VMIM.
		if health.DecideAbort(vmi, h, settings.ModeWarn, now).Action == health.AbortNone {
			continue
		}
		vmim, err := a.migration(ctx, vmi)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if vmim == nil || vmim.DeletionTimestamp != nil {
			continue // gone, or being cancelled already
		}
		mode := policy.ModeFor(settings.RuleRunningPathHealthy, settings.MigrationCreator(vmim, a.KubeVirtNamespace))
		d := health.DecideAbort(vmi, h, mode, now)
		if err := a.act(ctx, vmi, vmim, d); err != nil {
			errs = append(errs, err)
		}
	}
	a.forget(streaming)
	if len(errs) > 0 {
		return reconcile.Result{}, errs[0]
	}
	return reconcile.Result{}, nil
}

// act carries out d for the migration.
func (a *PathAbort) act(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, d health.AbortDecision) error {
	log := ctrl.LoggerFrom(ctx).WithValues("migration", klog.KObj(vmim), "vmi", klog.KObj(vmi))
	switch d.Action {
	case health.AbortWarn:
		if a.once(vmim.UID) {
			a.record(vmi, vmim, health.ReasonMigrationPathFailing, d.Message)
			log.Info("migration path failing; not aborted (rule at warn)", "reason", d.Message)
		}
		return nil
	case health.AbortDelete:
		// Preconditions: never another migration that took the name meanwhile.
		uid := vmim.UID
		switch err := a.Client.Delete(ctx, vmim, client.Preconditions{UID: &uid}); {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			return nil // gone, or the name is another migration's: not migranet's abort
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			// migranet's own postCopyCancel rule: the migration switched to post-copy since.
			log.Info("abort refused", "error", err.Error())
			return nil
		case err != nil:
			return err // nothing was written: the next pass judges it again
		}
		a.record(vmi, vmim, health.ReasonMigrationPathBroken, d.Message)
		log.Info("migration aborted: its path failed while it streamed", "reason", d.Message)
		return a.annotateAborted(ctx, vmim, d.Message)
	}
	return nil
}

// annotateAborted sets health.AbortedAnnotation on vmim once its delete succeeded: KubeVirt's
// finalizer keeps the VMIM until the abort completes, so the list view reads why it is cancelled.
// The patch carries the UID, so it lands on this migration only; once it is gone (the finalizer
// released, or none: no virt-api) the events tell the abort, and nothing is retried (the next pass
// skips a VMIM being deleted).
func (a *PathAbort) annotateAborted(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration, reason string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": vmim.UID, "annotations": map[string]string{health.AbortedAnnotation: reason}}})
	if err != nil {
		return err
	}
	ref := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: vmim.Namespace, Name: vmim.Name}}
	err = a.Client.Patch(ctx, ref, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("aborted migration not annotated: released already", "migration", klog.KObj(vmim), "error", err.Error())
		return nil
	}
	return err
}

// record leaves the Warning event on the VMIM and on its VMI (reference-only copies: the cached
// objects are shared). Both carry the migration's UID and its state as judged
// (settings.MigrationEventAnnotations): they tell the migration's story once its VMIM is gone and
// its VMI has moved on to another migration. The VMI's event names the migration in its message
// too (settings.MigrationSubject), so that another migration's event never folds into it.
func (a *PathAbort) record(vmi *kubevirtv1.VirtualMachineInstance, vmim *kubevirtv1.VirtualMachineInstanceMigration, reason, msg string) {
	if a.Recorder == nil {
		return
	}
	ann := func() map[string]string { // one map per event: the recorder hands it on asynchronously
		return settings.MigrationEventAnnotations(vmim.Name, vmim.UID, vmi.Status.MigrationState)
	}
	a.Recorder.AnnotatedEventf(&kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{
		Namespace: vmim.Namespace, Name: vmim.Name, UID: vmim.UID}}, ann(), corev1.EventTypeWarning, reason, "%s", msg)
	a.Recorder.AnnotatedEventf(&kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID}},
		ann(), corev1.EventTypeWarning, reason, "%s: %s", settings.MigrationSubject(vmim.Name, vmim.UID), msg)
}

// migration is the VMIM of vmi's migration state (by UID), nil when it is gone.
func (a *PathAbort) migration(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*kubevirtv1.VirtualMachineInstanceMigration, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := a.Client.List(ctx, list, client.InNamespace(vmi.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].UID == vmi.Status.MigrationState.MigrationUID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// policy is the migration policy in force; an unreadable or invalid value keeps the defaults of
// what did not decode (settings.ParseMigrationPolicy never loosens).
func (a *PathAbort) policy(ctx context.Context) (*settings.MigrationPolicy, error) {
	s := &v1beta1.Setting{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, s); apierrors.IsNotFound(err) {
		return &settings.MigrationPolicy{}, nil
	} else if err != nil {
		return nil, err
	}
	p, _ := settings.ParseMigrationPolicy(settings.EffectiveValue(s), field.NewPath("value"))
	if p == nil {
		p = &settings.MigrationPolicy{}
	}
	return p, nil
}

// once reports whether uid had no warning yet, and marks it.
func (a *PathAbort) once(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.warned[uid] {
		return false
	}
	a.warned[uid] = true
	return true
}

// forget drops the warnings of migrations that no longer stream.
func (a *PathAbort) forget(streaming map[types.UID]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid := range a.warned {
		if !streaming[uid] {
			delete(a.warned, uid)
		}
	}
}

func (a *PathAbort) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
