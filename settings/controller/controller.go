package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition; each failing step has its own.
const (
	ReasonApplied          = "Applied"
	ReasonDisabled         = "Disabled"
	ReasonInvalidValue     = "InvalidValue"
	ReasonNADFailed        = "NetworkAttachmentDefinitionFailed"
	ReasonKubeVirtNotFound = "KubeVirtNotFound"
	ReasonKubeVirtFailed   = "KubeVirtUpdateFailed"
	ReasonCleanupFailed    = "CleanupFailed"
	ReasonGuardFailed      = "GuardUpdateFailed"
	// ReasonHyperConvergedFailed: HCO mode could not patch the HyperConverged CR's network field.
	ReasonHyperConvergedFailed = "HyperConvergedUpdateFailed"
)

// Steps of the settings controller, in the order they run; a failing step ends the reconcile.
const (
	ControllerName = "settings"
	StepValue      = "value"    // parsing the effective value
	StepNAD        = "nad"      // ensuring the rendered NetworkAttachmentDefinition
	StepKubeVirt   = "kubevirt" // pointing the KubeVirt CR's migrations.network
	StepCleanup    = "cleanup"  // deleting managed NADs nothing references
	StepStatus     = "status"   // writing the Configured condition
	// StepHyperConverged reads the HyperConverged CR and what Decide needs (HCO mode only).
	StepHyperConverged = "hyperconverged"
)

// typesMergePatch is the JSON merge patch type (RFC 7386).
const typesMergePatch = types.MergePatchType

// Controller applies the vm-migration-network setting: it ensures the NetworkAttachmentDefinition
// its canonical value renders to, points the KubeVirt CR's spec.configuration.migrations.network at
// it (or removes the field when the value is empty), deletes the NADs it manages that nothing
// references any more, and only then records the applied hash. Every step is idempotent and the
// NAD name is a function of the value, so a restart at any point converges without duplicates.
type Controller struct {
	Client            client.Client
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	// APIReader reads Service default/kubernetes (clusterread.OwnNetworks; nil: not read).
	APIReader client.Reader
	// Metrics counts the steps of each reconcile; nil counts nothing.
	Metrics *statuswrite.Metrics
	// Guard is the parameter of the policies that keep other pods and VMs off the migration
	// network; nil leaves it alone.
	Guard *GuardParams
	// HCO, when set, is HCO mode: the network goes into the HyperConverged CR, never the
	// KubeVirt CR, and a network chosen there is mirrored (hco.go).
	HCO *HCO
}

// SetupWithManager watches the setting, the KubeVirt CR, the NADs migranet manages and the nodes'
// labels.
func (r *Controller) SetupWithManager(mgr ctrl.Manager) error {
	r.Metrics.Init(ControllerName, StepValue, StepNAD, StepKubeVirt, StepCleanup, StepStatus)
	if r.HCO != nil {
		r.Metrics.Init(ControllerName, StepHyperConverged)
	}
	toSetting := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.KubeVirtNamespace })
	managed := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[settings.LabelManagedBy] == settings.ManagedBy })
	nads := []predicate.Predicate{inNamespace, managed}
	b := ctrl.NewControllerManagedBy(mgr).Named("settings")
	if r.HCO != nil {
		// The mirror reads whichever NAD the KubeVirt CR names; the HyperConverged CR decides.
		nads = nads[:1]
		b = b.Watches(r.HCO.Field.New(), toSetting, builder.WithPredicates(inNamespace, named(r.HCO.Key.Name)))
	}
	return b.For(&v1beta1.Setting{}, builder.WithPredicates(named(v1beta1.MigrationNetwork), predicate.GenerationChangedPredicate{})).
		Watches(&kubevirtv1.KubeVirt{}, toSetting, builder.WithPredicates(inNamespace)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, toSetting, builder.WithPredicates(nads...)).
		// A value refused for the nodes is applied once they make it valid (see judge): nodes
		// joining, leaving, or relabelled; their status is no concern here.
		Watches(&corev1.Node{}, toSetting, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

func named(name string) predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}

// Reconcile brings the cluster in line with the setting's effective value.
func (r *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	eff, err := r.judge(ctx, s)
	r.Metrics.Step(ControllerName, StepValue, err)
	if invalid := (*stepError)(nil); errors.As(err, &invalid) {
		// No retry: the watches on the setting, the nodes and the KubeVirt CR bring it back once
		// the value is fixed or the nodes make it valid.
		return reconcile.Result{}, r.writeStatus(ctx, s, settings.Effective{}, invalid, nil)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if r.HCO != nil {
		return r.reconcileHCO(ctx, s, eff)
	}
	serr := r.apply(ctx, s, eff)
	if err := r.writeStatus(ctx, s, eff, serr, nil); err != nil {
		return reconcile.Result{}, err
	}
	if serr != nil {
		if serr.reason == ReasonKubeVirtNotFound {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, serr
	}
	return reconcile.Result{}, nil
}

// judge returns the setting's effective network once it passes the checks admission makes, or an
// InvalidValue *stepError naming every problem and its fix (any other error: the nodes could not be
// read). The webhook refuses such values, but a value stored while it did not see them (migranet
// installed after the value, the webhook taken out of the chain) reaches the controller unjudged:
// nothing is rendered from it, and the network applied last stays in force.
//
// The checks of the value itself run always. The checks that depend on the nodes (the cluster
// network on every eligible node, an address for every eligible node) run only for a value not
// applied yet: the value in force was judged against the nodes when it was applied, and a node
// that joins since without the cluster network, or a range the nodes outgrow, must not tear down
// the network every other node uses. The network controller reports such a node (status.nodes,
// Ready) and admission keeps migrations off it.
func (r *Controller) judge(ctx context.Context, s *v1beta1.Setting) (settings.Effective, error) {
	eff := settings.ValueNetwork(s)
	var cl *settings.Cluster
	// An invalid value is never the one in force: the nodes are named for it too, so every problem
	// is told at once.
	if !eff.Disabled() && (eff.Network == nil || eff.Hash != s.Status.AppliedHash) {
		var err error
		if cl, err = r.cluster(ctx); err != nil {
			return eff, err
		}
	}
	if errs := eff.Validate(cl); len(errs) > 0 {
		inForce := "nothing was applied before: migrations go on over the pod network"
		if s.Status.AppliedNetwork != "" {
			inForce = "the network applied before, " + s.Status.AppliedNetwork + " stays in force"
		}
		return eff, &stepError{ReasonInvalidValue, fmt.Errorf("the stored value is not applied: admission refuses it "+
			"(it was stored while migranet's webhook did not see it, or the nodes changed since); %s; fix: %s",
			inForce, settings.ErrorsMessage(errs))}
	}
	return eff, nil
}

// cluster is what the checks that depend on the nodes look at (ReadCluster).
func (r *Controller) cluster(ctx context.Context) (*settings.Cluster, error) {
	return ReadCluster(ctx, r.Client, r.APIReader, r.KubeVirtNamespace)
}

// ReadCluster is what the checks that depend on the nodes look at, read from c (the manager's
// cache; apiReader reads Service default/kubernetes, nil: not read) and derived as the setting
// webhook derives it (settings.ClusterOf).
func ReadCluster(ctx context.Context, c client.Reader, apiReader client.Reader, kubevirtNamespace string) (*settings.Cluster, error) {
	list := &corev1.NodeList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	kv, err := clusterread.KubeVirtCR(ctx, c, kubevirtNamespace)
	if err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	services, pods, missed := clusterread.OwnNetworks(ctx, c, apiReader, kubevirtNamespace)
	if missed != "" {
		ctrl.LoggerFrom(ctx).Info("the range is not checked against " + missed)
	}
	return settings.ClusterOf(nodes, kv, services, pods), nil
}

// stepError is a failed step of apply, with the condition reason it reports.
type stepError struct {
	reason string
	err    error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// apply runs the steps in order: guard, NAD, KubeVirt CR (in HCO mode the HyperConverged CR),
// cleanup, guard. It stops at the first failure. The guard lists the new NAD before it exists and
// the old ones until they are deleted, so no moment leaves a migration NAD open to other pods and
// VMs. keep are NADs still in use besides the new one (HCO mode: the one the KubeVirt CR names
// until HCO copies the field): neither deleted nor dropped from the guard.
func (r *Controller) apply(ctx context.Context, s *v1beta1.Setting, eff settings.Effective, keep ...string) *stepError {
	want := settings.RenderNAD(eff, r.KubeVirtNamespace)
	network := eff.NAD
	managed, err := r.managedNADs(ctx)
	if err == nil {
		err = r.setGuard(ctx, append(managed, network)...)
	}
	if err != nil {
		r.Metrics.Step(ControllerName, StepNAD, err)
		return &stepError{ReasonGuardFailed, err}
	}
	if want != nil {
		err := r.recordRange(ctx, s, eff.Network.Range)
		if err == nil {
			err = r.ensureNAD(ctx, want)
		}
		r.Metrics.Step(ControllerName, StepNAD, err)
		if err != nil {
			return &stepError{ReasonNADFailed, fmt.Errorf("ensuring NetworkAttachmentDefinition %s/%s: %w", want.Namespace, want.Name, err)}
		}
	}
	point := r.pointKubeVirt
	if r.HCO != nil {
		point = r.pointHyperConverged
	}
	if serr := point(ctx, network); serr != nil {
		r.Metrics.Step(ControllerName, StepKubeVirt, serr)
		return serr
	}
	r.Metrics.Step(ControllerName, StepKubeVirt, nil)
	inUse := settings.AppendUnique([]string{network}, keep...)
	err = r.deleteUnreferenced(ctx, inUse...)
	r.Metrics.Step(ControllerName, StepCleanup, err)
	if err != nil {
		return &stepError{ReasonCleanupFailed, fmt.Errorf("deleting NetworkAttachmentDefinitions no longer referenced: %w", err)}
	}
	if err := r.setGuard(ctx, inUse...); err != nil {
		return &stepError{ReasonGuardFailed, err}
	}
	return nil
}

// recordRange records rng in s's status.ranges (RecordRange).
func (r *Controller) recordRange(ctx context.Context, s *v1beta1.Setting, rng netip.Prefix) error {
	return RecordRange(ctx, r.Client, s, rng)
}

// RecordRange adds rng to status.ranges (own field manager) unless it is recorded already: the
// network controller deletes empty whereabouts pools only of recorded ranges, so a range is
// recorded before any NAD of it exists (or, in Harvester mode, as soon as its NAD is seen in
// force), as the guard names a NAD first.
func RecordRange(ctx context.Context, c client.Client, s *v1beta1.Setting, rng netip.Prefix) error {
	ranges, changed := settings.RecordRange(s.Status.Ranges, rng)
	if !changed {
		return nil
	}
	if err := statuswrite.ApplyStatus(ctx, c, s, statuswrite.FieldManagerRanges, nil, map[string]any{"ranges": ranges}); err != nil {
		return fmt.Errorf("recording range %s in status.ranges: %w", rng.Masked(), err)
	}
	s.Status.Ranges = ranges
	return nil
}

// setGuard lists names (empty ones dropped) in the guard's parameter.
func (r *Controller) setGuard(ctx context.Context, names ...string) error {
	if r.Guard == nil {
		return nil
	}
	return r.Guard.Set(ctx, names...)
}

// managedNADs lists the names of the NADs migranet manages in KubeVirt's namespace.
func (r *Controller) managedNADs(ctx context.Context) ([]string, error) {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads, client.InNamespace(r.KubeVirtNamespace), client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing the NetworkAttachmentDefinitions migranet manages: %w", err)
	}
	names := make([]string, 0, len(nads.Items))
	for i := range nads.Items {
		names = append(names, nads.Items[i].Name)
	}
	return names, nil
}

// ensureNAD creates the rendered NAD, or puts back its config and metadata if edited by hand.
func (r *Controller) ensureNAD(ctx context.Context, want *nadv1.NetworkAttachmentDefinition) error {
	have := &nadv1.NetworkAttachmentDefinition{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Info("creating NetworkAttachmentDefinition", "nad", klog.KObj(want))
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, want))
	}
	if err != nil {
		return err
	}
	if have.Spec.Config == want.Spec.Config && subset(want.Labels, have.Labels) && subset(want.Annotations, have.Annotations) {
		return nil
	}
	patch := client.MergeFrom(have.DeepCopy())
	have.Spec.Config = want.Spec.Config
	have.Labels = merge(have.Labels, want.Labels)
	have.Annotations = merge(have.Annotations, want.Annotations)
	return r.Client.Patch(ctx, have, patch)
}

// pointKubeVirt sets (or, for "", removes) spec.configuration.migrations.network on the KubeVirt
// CR, only when it differs, with a JSON merge patch of that one field. The patch carries no
// resourceVersion precondition on purpose: it is atomic on the server and leaves every other
// field alone, while virt-operator rewrites the CR's status throughout a rollout, so a guarded
// patch would mostly meet conflicts and back off.
func (r *Controller) pointKubeVirt(ctx context.Context, network string) *stepError {
	kv, err := clusterread.KubeVirtCR(ctx, r.Client, r.KubeVirtNamespace)
	if err != nil {
		return &stepError{ReasonKubeVirtFailed, err}
	}
	if kv == nil {
		return &stepError{ReasonKubeVirtNotFound, fmt.Errorf("no KubeVirt CR in namespace %s; the setting is applied as soon as one appears", r.KubeVirtNamespace)}
	}
	if settings.MigrationNetworkOf(kv) == network {
		return nil
	}
	patch := client.MergeFrom(kv.DeepCopy())
	if kv.Spec.Configuration.MigrationConfiguration == nil {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{}
	}
	kv.Spec.Configuration.MigrationConfiguration.Network = nil
	if network != "" {
		kv.Spec.Configuration.MigrationConfiguration.Network = &network
	}
	ctrl.LoggerFrom(ctx).Info("pointing KubeVirt at the migration network", "kubevirt", klog.KObj(kv), "network", network)
	if err := r.Client.Patch(ctx, kv, patch); err != nil {
		return &stepError{ReasonKubeVirtFailed, fmt.Errorf("patching KubeVirt %s/%s migrations.network=%q: %w", kv.Namespace, kv.Name, network, err)}
	}
	return nil
}

// deleteUnreferenced deletes managed NADs not in keep; no CR points at them any more.
func (r *Controller) deleteUnreferenced(ctx context.Context, keep ...string) error {
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads, client.InNamespace(r.KubeVirtNamespace), client.MatchingLabels{settings.LabelManagedBy: settings.ManagedBy}); err != nil {
		return err
	}
	var errs []error
	for i := range nads.Items {
		nad := &nads.Items[i]
		if slices.Contains(keep, nad.Name) || nad.DeletionTimestamp != nil {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("deleting unreferenced NetworkAttachmentDefinition", "nad", klog.KObj(nad))
		if err := r.Client.Delete(ctx, nad, client.Preconditions{UID: &nad.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

// writeStatus records the outcome of a reconcile: on success the applied hash and network and
// Configured=True; on failure Configured=False with the failing step's reason, keeping the hash
// and network applied last. An event marks each transition of the condition (status or reason) and each newly applied
// value; a step failing again with the same reason on a retry emits nothing more.
//
// In HCO mode hco is the decision that wrote migranet's value: on success its Configured and
// writtenHash are recorded.
func (r *Controller) writeStatus(ctx context.Context, s *v1beta1.Setting, eff settings.Effective, serr *stepError, hco *hcomode.Decision) error {
	m := eff.Network
	cond := metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue}
	fields := map[string]any{
		"appliedHash":    s.Status.AppliedHash,
		"appliedNetwork": s.Status.AppliedNetwork,
		"summary":        m.Summary(),
		// Harvester mode's mirror writes status.source under the same field manager; this
		// controller runs only outside that mode, where no other setting decides the network.
		"source":      nil,
		"writtenHash": s.Status.WrittenHash,
	}
	switch {
	case serr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, serr.reason, serr.Error()
		if serr.reason == ReasonInvalidValue {
			fields["summary"] = "invalid"
		}
	case m == nil:
		cond.Reason, cond.Message = ReasonDisabled, "migration network disabled: migrations use the pod network"
		fields["appliedHash"], fields["appliedNetwork"] = "", ""
	default:
		cond.Reason, cond.Message = ReasonApplied, "KubeVirt migrations.network points at "+eff.NAD
		fields["appliedHash"], fields["appliedNetwork"] = eff.Hash, eff.NAD
	}
	if hco != nil && serr == nil {
		cond.Status, cond.Reason, cond.Message = hco.Configured.Status, hco.Configured.Reason, hco.Configured.Message
		fields["writtenHash"] = hco.WrittenHash
	}
	if statuswrite.ConditionChanged(s.Status.Conditions, cond) || (serr == nil && s.Status.AppliedHash != fields["appliedHash"]) {
		eventType := corev1.EventTypeNormal
		if serr != nil {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(s, eventType, cond.Reason, cond.Message)
	}
	err := statuswrite.ApplyStatus(ctx, r.Client, s, statuswrite.FieldManagerSettings, []metav1.Condition{cond}, fields)
	r.Metrics.Step(ControllerName, StepStatus, err)
	statuswrite.RecordWriteFailure(r.Recorder, s, statuswrite.FieldManagerSettings, err)
	return err
}
