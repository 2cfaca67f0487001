package netcontroller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ProbeDaemonSet is the name of the probe agent's DaemonSet (manifests/probe), and
// DefaultProbeNamespace its namespace.
const (
	ProbeDaemonSet        = "migranet-probe"
	DefaultProbeNamespace = "migranet-probe"
	// FieldManagerPlacement owns the probe DaemonSet's placement fields (server-side apply).
	FieldManagerPlacement = "migranet-probe-placement"
)

// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=list;watch;patch,namespace=migranet-probe

// Placement is where pods go: the pod spec's node selector, affinity and tolerations.
type Placement struct {
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// VirtHandlerPlacement is where virt-operator puts virt-handler's pods for kv, so the probe agent
// runs on exactly the nodes a virt-handler may run on (KubeVirt v1.8.4: newPodTemplateSpec gives
// virt-handler the toleration of CriticalAddonsOnly; placement.InjectPlacementMetadata with
// spec.workloads and AnyNode adds the workloads' node selector, kubernetes.io/os=linux unless it
// names that label, their affinity and their tolerations). kv nil is KubeVirt's default.
func VirtHandlerPlacement(kv *kubevirtv1.KubeVirt) Placement {
	p := Placement{
		NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
		Tolerations:  []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
	}
	if kv == nil || kv.Spec.Workloads == nil || kv.Spec.Workloads.NodePlacement == nil {
		return p
	}
	np := kv.Spec.Workloads.NodePlacement
	for k, v := range np.NodeSelector {
		p.NodeSelector[k] = v
	}
	p.Affinity = np.Affinity.DeepCopy()
	for _, t := range np.Tolerations {
		p.Tolerations = append(p.Tolerations, *t.DeepCopy())
	}
	return p
}

// placementOf is the placement in a pod template.
func placementOf(t *corev1.PodTemplateSpec) Placement {
	return Placement{NodeSelector: t.Spec.NodeSelector, Affinity: t.Spec.Affinity, Tolerations: t.Spec.Tolerations}
}

// Equal reports whether p and q place pods alike (an empty selector or list equals none).
func (p Placement) Equal(q Placement) bool {
	return equality.Semantic.DeepEqual(p.Affinity, q.Affinity) &&
		(len(p.NodeSelector) == 0 && len(q.NodeSelector) == 0 || equality.Semantic.DeepEqual(p.NodeSelector, q.NodeSelector)) &&
		(len(p.Tolerations) == 0 && len(q.Tolerations) == 0 || equality.Semantic.DeepEqual(p.Tolerations, q.Tolerations))
}

// ProbePlacement (leader only) keeps the probe agent's DaemonSet placed as KubeVirt places
// virt-handler: it server-side applies the template's node selector, affinity and tolerations
// from the KubeVirt CR's spec.workloads.nodePlacement, as field manager FieldManagerPlacement, and
// touches nothing else of the DaemonSet. Without the DaemonSet (the agent not installed) it does
// nothing.
type ProbePlacement struct {
	Client            client.Client
	Namespace         string // the DaemonSet's
	KubeVirtNamespace string
}

// ProbeDaemonSetCache limits the manager's DaemonSet cache to the probe agent's.
func ProbeDaemonSetCache(namespace string) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", ProbeDaemonSet),
	}
}

// SetupWithManager runs the reconciler on the leader, on changes of the DaemonSet and of KubeVirt CRs.
func (r *ProbePlacement) SetupWithManager(mgr manager.Manager) error {
	key := types.NamespacedName{Namespace: r.Namespace, Name: ProbeDaemonSet}
	toDaemonSet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	return builder.ControllerManagedBy(mgr).Named("probe-placement").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		For(&appsv1.DaemonSet{}).
		Watches(&kubevirtv1.KubeVirt{}, toDaemonSet).
		Complete(r)
}

// Reconcile applies the placement when the DaemonSet's differs.
func (r *ProbePlacement) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != r.Namespace || req.Name != ProbeDaemonSet {
		return reconcile.Result{}, nil
	}
	ds := &appsv1.DaemonSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kvs := &kubevirtv1.KubeVirtList{}
	if err := r.Client.List(ctx, kvs, client.InNamespace(r.KubeVirtNamespace)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	var kv *kubevirtv1.KubeVirt
	if len(kvs.Items) > 0 {
		kv = &kvs.Items[0]
	}
	want := VirtHandlerPlacement(kv)
	if want.Equal(placementOf(&ds.Spec.Template)) {
		return reconcile.Result{}, nil
	}
	patch, err := placementPatch(ds, want)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.Patch(ctx, patch, client.Apply, client.FieldOwner(FieldManagerPlacement), client.ForceOwnership); err != nil {
		return reconcile.Result{}, fmt.Errorf("placing the probe agent's DaemonSet %s/%s as virt-handler: %w", ds.Namespace, ds.Name, err)
	}
	return reconcile.Result{}, nil
}

// placementPatch is the apply configuration holding only ds's placement fields, set to p.
func placementPatch(ds *appsv1.DaemonSet, p Placement) (*unstructured.Unstructured, error) {
	spec := corev1.PodSpec{NodeSelector: p.NodeSelector, Affinity: p.Affinity, Tolerations: p.Tolerations}
	podSpec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		return nil, err
	}
	delete(podSpec, "containers") // a PodSpec always renders it; the agent's are not ours
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": ds.Name, "namespace": ds.Namespace},
		"spec":     map[string]any{"template": map[string]any{"spec": podSpec}},
	}}
	return u, nil
}
