package controller

import (
	"context"
	"errors"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition; each failing step has its own. Those of the sources'
// decisions are decider's (ReasonApplied and the others below are the same words).
const (
	ReasonApplied          = decider.ReasonApplied
	ReasonDisabled         = decider.ReasonDisabled
	ReasonKubeVirtNotFound = decider.ReasonKubeVirtNotFound
	ReasonInvalidValue     = "InvalidValue"
	ReasonNADFailed        = "NetworkAttachmentDefinitionFailed"
	ReasonKubeVirtFailed   = "KubeVirtUpdateFailed"
	ReasonCleanupFailed    = "CleanupFailed"
	ReasonGuardFailed      = "GuardUpdateFailed"
	// ReasonHyperConvergedFailed: HCO mode could not patch the HyperConverged CR's network field.
	ReasonHyperConvergedFailed = "HyperConvergedUpdateFailed"
	// ReasonReadFailed: what the decision needs could not be read from the cache.
	ReasonReadFailed = "ReadFailed"
)

// Steps of the settings controller, in the order they run; a failing step ends the reconcile.
const (
	ControllerName = "settings"
	StepValue      = "value"    // judging migranet's own value
	StepRead       = "read"     // reading what the source's decision looks at
	StepGuard      = "guard"    // the guard's parameter
	StepNAD        = "nad"      // ensuring the rendered NetworkAttachmentDefinition
	StepKubeVirt   = "kubevirt" // pointing the source's field (KubeVirt CR, HyperConverged CR)
	StepCleanup    = "cleanup"  // deleting managed NADs nothing references
	StepStatus     = "status"   // writing the Configured condition
)

// Controller is the one reconciler of the vm-migration-network setting, whoever decides the
// network (decider): it reads what the source's Decide looks at, and carries the decision out in
// steps — the guard on every NAD in use first, migranet's NAD rendered when its value decides (or
// is kept for a hand-back), the source's one field pointed at it, the NADs migranet manages that
// nothing names deleted, the guard narrowed, and the status written once. Every step is
// idempotent and the NAD name is a function of the value, so a restart at any point converges.
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
	// Decider is who decides the network (decider.Detect, once at start-up); nil is decider.Own.
	Decider decider.Decider
}

// source is the Decider in use.
func (r *Controller) source() decider.Decider {
	if r.Decider == nil {
		return decider.Own{Namespace: r.KubeVirtNamespace}
	}
	return r.Decider
}

// SetupWithManager watches the setting, the KubeVirt CR and the NADs of KubeVirt's namespace,
// the nodes' labels and the object the source decides with (Harvester's setting, the
// HyperConverged CR).
func (r *Controller) SetupWithManager(mgr ctrl.Manager) error {
	r.Metrics.Init(ControllerName, StepValue, StepRead, StepGuard, StepNAD, StepKubeVirt, StepCleanup, StepStatus)
	toSetting := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.KubeVirtNamespace })
	b := ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		// Its own status writes and the other writers' (paths every few seconds) are no reason to
		// look again; a value is.
		For(&v1beta1.Setting{}, builder.WithPredicates(named(v1beta1.MigrationNetwork), predicate.GenerationChangedPredicate{})).
		Watches(&kubevirtv1.KubeVirt{}, toSetting, builder.WithPredicates(inNamespace)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, toSetting, builder.WithPredicates(inNamespace)).
		// A value refused for the nodes is applied once they make it valid (see judge): nodes
		// joining, leaving, or relabelled; their status is no concern here.
		Watches(&corev1.Node{}, toSetting, builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if owner, key := r.source().Owner(); owner != nil {
		b = b.Watches(owner, toSetting, builder.WithPredicates(named(key.Name), predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == key.Namespace
		})))
	}
	return b.Complete(r)
}

func named(name string) predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}

// Reconcile brings the cluster in line with what decides the network.
func (r *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	src := r.source()
	var eff settings.Effective
	if src.UsesValue() {
		var err error
		eff, err = r.judge(ctx, s)
		r.Metrics.Step(ControllerName, StepValue, err)
		if invalid := (*stepError)(nil); errors.As(err, &invalid) {
			// No retry: the watches on the setting, the nodes and the KubeVirt CR bring it back
			// once the value is fixed or the nodes make it valid.
			return reconcile.Result{}, r.writeStatus(ctx, s, settings.Effective{}, decider.Decision{}, invalid)
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	in, err := r.observe(ctx, s, eff)
	r.Metrics.Step(ControllerName, StepRead, err)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := src.Decide(in)
	serr := r.carryOut(ctx, s, eff, d)
	if err := r.writeStatus(ctx, s, eff, d, serr); err != nil {
		return reconcile.Result{}, err
	}
	if serr != nil {
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

// stepError is a failed step, with the condition reason it reports.
type stepError struct {
	reason string
	err    error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }
