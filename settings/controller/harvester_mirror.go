package controller

import (
	"context"
	"fmt"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
)

// MirrorName names the mirror in logs and step metrics.
const MirrorName = "harvester-mirror"

// HarvesterMirror writes, in Harvester mode, the network in force into migranet's vm-migration-network
// setting (Decide): status.source, the applied hash and network, the summary and Configured. It
// records each range in force in status.ranges (so the network controller deletes the empty
// whereabouts pools of Harvester's earlier ranges) and keeps the guard's parameter on every
// migration NAD Harvester rendered. It never writes a NAD or the KubeVirt CR.
type HarvesterMirror struct {
	Client            client.Client
	Recorder          record.EventRecorder
	KubeVirtNamespace string
	// APIReader reads Service default/kubernetes for the cluster's checks (nil: not read).
	APIReader client.Reader
	// Metrics counts the steps; nil counts nothing.
	Metrics *statuswrite.Metrics
	// Guard is the guard policies' parameter; nil leaves it alone.
	Guard *GuardParams
}

// Steps of the mirror (besides StepStatus).
const (
	StepRead  = "read"
	StepGuard = "guard"
)

// SetupWithManager watches migranet's and Harvester's vm-migration-network settings, the KubeVirt
// CR and the NADs in KubeVirt's namespace, and the nodes' labels (the cluster's checks).
func (m *HarvesterMirror) SetupWithManager(mgr ctrl.Manager) error {
	m.Metrics.Init(MirrorName, StepRead, StepGuard, StepStatus)
	toSetting := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: v1beta1.MigrationNetwork}}}
	})
	named := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == v1beta1.MigrationNetwork })
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == m.KubeVirtNamespace })
	return ctrl.NewControllerManagedBy(mgr).Named(MirrorName).
		// Its own status writes and the other writers' (paths every few seconds) are no reason to
		// look again; a value (refused, but stored before the mode) is.
		For(&v1beta1.Setting{}, builder.WithPredicates(named, predicate.GenerationChangedPredicate{})).
		Watches(harvestermode.NewSetting(), toSetting, builder.WithPredicates(named)).
		Watches(&kubevirtv1.KubeVirt{}, toSetting, builder.WithPredicates(inNamespace)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, toSetting, builder.WithPredicates(inNamespace)).
		Watches(&corev1.Node{}, toSetting, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(m)
}

// Reconcile mirrors the network in force into the setting's status.
func (m *HarvesterMirror) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1beta1.Setting{}
	if err := m.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	in, err := m.read(ctx, s)
	m.Metrics.Step(MirrorName, StepRead, err)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := harvestermode.Decide(in)
	if d.Network != nil {
		if err := RecordRange(ctx, m.Client, s, d.Network.Range); err != nil {
			return reconcile.Result{}, err
		}
	}
	if m.Guard != nil {
		err := m.Guard.Set(ctx, d.Guard...)
		m.Metrics.Step(MirrorName, StepGuard, err)
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	if d.Network != nil && d.Configured.Reason == harvestermode.ReasonMirrored {
		if problems := m.judge(ctx, d); problems != "" {
			d.Configured.Message += "; but migranet's rules find: " + problems
		}
	}
	return reconcile.Result{}, m.writeStatus(ctx, s, d)
}

// read gathers Decide's input from the cache.
func (m *HarvesterMirror) read(ctx context.Context, s *v1beta1.Setting) (harvestermode.Input, error) {
	in := harvestermode.Input{Namespace: m.KubeVirtNamespace, OwnValue: strings.TrimSpace(settings.EffectiveValue(s))}
	h := harvestermode.NewSetting()
	switch err := m.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, h); {
	case err == nil:
		in.Harvester = h
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("reading %s: %w", harvestermode.SettingRef, err)
	}
	kv, err := clusterread.KubeVirtCR(ctx, m.Client, m.KubeVirtNamespace)
	if err != nil {
		return in, err
	}
	in.KubeVirt = kv
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := m.Client.List(ctx, nads, client.InNamespace(m.KubeVirtNamespace)); err != nil {
		return in, fmt.Errorf("listing NetworkAttachmentDefinitions in %s: %w", m.KubeVirtNamespace, err)
	}
	in.NADs = nads.Items
	return in, nil
}

// judge runs migranet's rules on the network in force, as admission would on a value: what
// Harvester's own webhook accepted that cannot work here (a range over the nodes' addresses or
// the cluster's own networks, too few addresses, a node without the cluster network). It reports,
// never undoes: Harvester's setting decides.
func (m *HarvesterMirror) judge(ctx context.Context, d harvestermode.Decision) string {
	cl, err := ReadCluster(ctx, m.Client, m.APIReader, m.KubeVirtNamespace)
	if err != nil {
		return ""
	}
	errs := settings.EffectiveNetwork(&v1beta1.Setting{Status: v1beta1.SettingStatus{Source: d.Source}}).Validate(cl)
	if len(errs) == 0 {
		return ""
	}
	return settings.ErrorsMessage(errs)
}

// writeStatus writes the mirror's part of the status (the settings controller's fields: it does
// not run in Harvester mode).
func (m *HarvesterMirror) writeStatus(ctx context.Context, s *v1beta1.Setting, d harvestermode.Decision) error {
	return writeMirrorStatus(ctx, mirrorWrite{client: m.Client, recorder: m.Recorder, metrics: m.Metrics, name: MirrorName},
		s, d.Source, d.Network, d.Configured, "Harvester: ", nil)
}
