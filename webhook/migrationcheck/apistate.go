package migrationcheck

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// APIState is the State `migranet preflight` judges on: each answer is read through Reader (a
// client of the API server) when asked, with the network controller's observation made the same
// way (netcontroller.ObserveOnce) passed in as Snapshot.
type APIState struct {
	Reader            client.Reader
	KubeVirtNamespace string
	Snapshot          *health.Snapshot
}

// VMI implements State.
func (a *APIState) VMI(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	err := a.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vmi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return vmi, nil
}

// MigrationsOf implements State. The API server has no index on spec.vmiName: the namespace's
// VMIMs are listed and the matches kept.
func (a *APIState) MigrationsOf(ctx context.Context, namespace, vmiName string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := a.Reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []*kubevirtv1.VirtualMachineInstanceMigration
	for i := range list.Items {
		if m := &list.Items[i]; m.Namespace == namespace && m.Spec.VMIName == vmiName {
			out = append(out, m)
		}
	}
	return out, nil
}

// KubeVirt implements State.
func (a *APIState) KubeVirt(ctx context.Context) (*kubevirtv1.KubeVirt, error) {
	return clusterread.KubeVirtCR(ctx, a.Reader, a.KubeVirtNamespace)
}

// Settings implements State: a setting that cannot be read counts as absent.
func (a *APIState) Settings(ctx context.Context) (*SettingsView, error) {
	get := func(name string) *v1beta1.Setting {
		s := &v1beta1.Setting{}
		if err := a.Reader.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
			return nil
		}
		return s
	}
	return ViewOf(get(v1beta1.MigrationPolicy), get(v1beta1.MigrationNetwork)), nil
}

// Nodes implements State: the nodes in name order, without an index (the rules walk them).
func (a *APIState) Nodes(ctx context.Context) (*NodeSet, error) {
	list := &corev1.NodeList{}
	if err := a.Reader.List(ctx, list); err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return &NodeSet{Nodes: nodes}, nil
}

// Pods implements State: the cluster's active pods. A user who may not list pods gets no view:
// room on the nodes is then not judged, and the answer says so.
func (a *APIState) Pods(ctx context.Context) (PodView, error) {
	list := &corev1.PodList{}
	if err := a.Reader.List(ctx, list, client.MatchingFieldsSelector{Selector: activePods}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, err
	}
	pods := make(PodList, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// Network implements State.
func (a *APIState) Network() *health.Snapshot { return a.Snapshot }

// Traffic implements State: the unfinished VMIMs listed, each VMI and the target pods read (the
// pods labelled with a migration's UID), counted as the webhook counts them.
func (a *APIState) Traffic(ctx context.Context) (*Traffic, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := a.Reader.List(ctx, list); err != nil {
		return nil, err
	}
	var vmims []*kubevirtv1.VirtualMachineInstanceMigration
	for i := range list.Items {
		if Unfinished(&list.Items[i]) {
			vmims = append(vmims, &list.Items[i])
		}
	}
	if len(vmims) == 0 {
		return CountTraffic(nil, nil, nil), nil
	}
	pods := &corev1.PodList{}
	if err := a.Reader.List(ctx, pods, client.HasLabels{kubevirtv1.MigrationJobLabel}); err != nil {
		return nil, err
	}
	targets := map[types.UID][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		uid := types.UID(p.Labels[kubevirtv1.MigrationJobLabel])
		targets[uid] = append(targets[uid], p)
	}
	var readErr error
	t := CountTraffic(vmims, func(namespace, name string) *kubevirtv1.VirtualMachineInstance {
		v, err := a.VMI(ctx, namespace, name)
		if err != nil && readErr == nil {
			readErr = err
		}
		return v
	}, func(uid types.UID) []*corev1.Pod { return targets[uid] })
	if readErr != nil {
		return nil, readErr
	}
	return t, nil
}

// Paths implements State: the PathReports listed from the API server, judged for the NAD the
// Snapshot names (in KubeVirtNamespace, as the agents name it: namespace/name). Reports that
// cannot be read (no CRD, no permission) are no health data: nil.
func (a *APIState) Paths(ctx context.Context) *health.PathHealth {
	if a.Snapshot == nil || a.Snapshot.Network == "" {
		return nil
	}
	list := &v1beta1.PathReportList{}
	if err := a.Reader.List(ctx, list); err != nil {
		return nil
	}
	reports := make([]*v1beta1.PathReport, len(list.Items))
	for i := range list.Items {
		reports[i] = &list.Items[i]
	}
	pods := &corev1.PodList{}
	if err := a.Reader.List(ctx, pods, client.InNamespace(a.KubeVirtNamespace),
		client.MatchingLabels{settings.VirtHandlerLabel: settings.VirtHandlerValue}); err == nil {
		handlers := make([]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			handlers[i] = &pods.Items[i]
		}
		reports = health.CurrentReports(reports, health.VirtHandlerUIDs(handlers))
	}
	return health.Paths(settings.NADRef(a.KubeVirtNamespace, a.Snapshot.Network), reports)
}
