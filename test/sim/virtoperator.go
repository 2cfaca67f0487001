package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
)

// Names and reasons virt-operator uses.
const (
	VirtHandlerName         = "virt-handler"
	VirtHandlerLabel        = "kubevirt.io"
	NetworksAnnotation      = "k8s.v1.cni.cncf.io/networks"
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	MigrationInterface      = "migration0"
	ReasonReady             = "AllComponentsReady"
	ReasonDeploying         = "DeploymentInProgress"
	ReasonUpdating          = "UpdateInProgress"

	templateHashAnnotation = "sim.migranet.io/template-hash"
)

// VirtOperator is the virt-operator simulator (see the package documentation).
type VirtOperator struct {
	Client    client.Client
	Namespace string
}

// SetupWithManager registers the simulator with a manager.
func (r *VirtOperator) SetupWithManager(mgr ctrl.Manager) error {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	toCR := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &kubevirtv1.KubeVirtList{}
		if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, kv := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&kv)})
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).Named("sim-virt-operator").
		For(&kubevirtv1.KubeVirt{}, builder.WithPredicates(inNamespace)).
		Watches(&appsv1.DaemonSet{}, toCR, builder.WithPredicates(inNamespace)).
		Complete(r)
}

// Reconcile keeps the virt-handler DaemonSet in line with the CR and reports the CR's conditions.
func (r *VirtOperator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kv := &kubevirtv1.KubeVirt{}
	if err := r.Client.Get(ctx, req.NamespacedName, kv); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if kv.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	ds, err := r.ensureDaemonSet(ctx, kv)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.updateStatus(ctx, kv, ds)
}

func (r *VirtOperator) ensureDaemonSet(ctx context.Context, kv *kubevirtv1.KubeVirt) (*appsv1.DaemonSet, error) {
	want := VirtHandlerDaemonSet(kv)
	ds := &appsv1.DaemonSet{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), ds)
	if apierrors.IsNotFound(err) {
		return want, r.Client.Create(ctx, want)
	}
	if err != nil {
		return nil, err
	}
	// The API server defaults fields of the template, so compare what was rendered, not the result.
	if ds.Annotations[templateHashAnnotation] == want.Annotations[templateHashAnnotation] {
		return ds, nil
	}
	ds.Spec.Template = want.Spec.Template
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[templateHashAnnotation] = want.Annotations[templateHashAnnotation]
	return ds, r.Client.Update(ctx, ds)
}

// VirtHandlerDaemonSet renders the virt-handler DaemonSet virt-operator would deploy for kv: node
// placement from spec.workloads, and the migration network attached as migration0.
func VirtHandlerDaemonSet(kv *kubevirtv1.KubeVirt) *appsv1.DaemonSet {
	labels := map[string]string{VirtHandlerLabel: VirtHandlerName}
	podMeta := metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{}}
	if net := settings.MigrationNetworkOf(kv); net != "" {
		podMeta.Annotations[NetworksAnnotation] = net + "@" + MigrationInterface
	}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  VirtHandlerName,
			Image: "kubevirt/virt-handler:simulated",
		}},
		ServiceAccountName:           "kubevirt-handler",
		AutomountServiceAccountToken: new(bool),
		Tolerations:                  []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
	}
	// placement.InjectPlacementMetadata(kv.Spec.Workloads, …, AnyNode), KubeVirt v1.8.4: the
	// workloads' node selector over kubernetes.io/os=linux, their affinity, their tolerations
	// after newPodTemplateSpec's.
	spec.NodeSelector = map[string]string{corev1.LabelOSStable: "linux"}
	if p := kv.Spec.Workloads; p != nil && p.NodePlacement != nil {
		for k, v := range p.NodePlacement.NodeSelector {
			spec.NodeSelector[k] = v
		}
		spec.Affinity = p.NodePlacement.Affinity
		spec.Tolerations = append(spec.Tolerations, p.NodePlacement.Tolerations...)
	}
	one := intstr.FromInt32(1)
	template := corev1.PodTemplateSpec{ObjectMeta: podMeta, Spec: spec}
	rendered, _ := json.Marshal(template) // a PodTemplateSpec always marshals
	sum := sha256.Sum256(rendered)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: VirtHandlerName, Namespace: kv.Namespace, Labels: labels,
			Annotations: map[string]string{templateHashAnnotation: hex.EncodeToString(sum[:8])}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one},
			},
		},
	}
}

// rolledOut reports whether every virt-handler pod runs the current template and is available.
func rolledOut(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	if ds.Generation == 0 || st.ObservedGeneration < ds.Generation {
		return false, "virt-handler DaemonSet update not yet observed"
	}
	msg := fmt.Sprintf("virt-handler: %d of %d pods updated, %d available", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable)
	return st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberAvailable == st.DesiredNumberScheduled && st.NumberUnavailable == 0, msg
}

func (r *VirtOperator) updateStatus(ctx context.Context, kv *kubevirtv1.KubeVirt, ds *appsv1.DaemonSet) error {
	status := kv.Status.DeepCopy()
	ready, msg := rolledOut(ds)
	SyncConditions(status, ds.Annotations[templateHashAnnotation], ready, msg)
	status.ObservedGeneration = &kv.Generation
	if apiequality.Semantic.DeepEqual(status, &kv.Status) {
		return nil
	}
	kv.Status = *status
	return r.Client.Status().Update(ctx, kv)
}

// SyncConditions sets the phase, the deployment IDs and the Available/Progressing/Degraded
// conditions as KubeVirt v1.8.4's virt-operator does in syncInstallation
// (pkg/virt-operator/kubevirt.go), for a deployment config whose ID is target (virt-operator hashes
// its deployment config, which includes migrations.network through
// AdditionalPropertiesMigrationNetwork in pkg/virt-operator/util/config.go; here the rendered
// virt-handler template stands for it) and a virt-handler DaemonSet that has rolledOut or not:
//   - the phase becomes Deploying only when it is empty, Deployed once everything is ready;
//   - isUpdating (an observed deployment ID that differs from the target) gives
//     UpdateConditionsUpdating: Available=True, Progressing=True, Degraded=True, UpdateInProgress;
//     otherwise (first install) UpdateConditionsDeploying: Available=False, Progressing=True,
//     Degraded=False, DeploymentInProgress (pkg/virt-operator/util/client.go);
//   - the reconciler's Sync returns true only once syncDaemonSet's canary upgrade has finished
//     (pkg/virt-operator/resource/apply/apps.go, every pod updated and ready, DaemonsetIsReady in
//     pkg/virt-operator/util/readycheck.go); then SetObservedDeploymentConfig records the target
//     as observed and UpdateConditionsAvailable gives True/False/False, AllComponentsReady.
func SyncConditions(status *kubevirtv1.KubeVirtStatus, target string, rolledOut bool, progress string) {
	status.TargetDeploymentID = target
	if status.Phase == "" {
		status.Phase = kubevirtv1.KubeVirtPhaseDeploying
	}
	if rolledOut {
		status.ObservedDeploymentID = target
		status.Phase = kubevirtv1.KubeVirtPhaseDeployed
		const msg = "All components are ready."
		setCondition(status, kubevirtv1.KubeVirtConditionAvailable, corev1.ConditionTrue, ReasonReady, msg)
		setCondition(status, kubevirtv1.KubeVirtConditionProgressing, corev1.ConditionFalse, ReasonReady, msg)
		setCondition(status, kubevirtv1.KubeVirtConditionDegraded, corev1.ConditionFalse, ReasonReady, msg)
		return
	}
	if status.ObservedDeploymentID != "" && status.ObservedDeploymentID != target {
		msg := fmt.Sprintf("Transitioning from previous version %s with registry %s to target version %s using registry %s (%s)",
			status.ObservedKubeVirtVersion, status.ObservedKubeVirtRegistry, status.TargetKubeVirtVersion, status.TargetKubeVirtRegistry, progress)
		setCondition(status, kubevirtv1.KubeVirtConditionAvailable, corev1.ConditionTrue, ReasonUpdating, msg)
		setCondition(status, kubevirtv1.KubeVirtConditionProgressing, corev1.ConditionTrue, ReasonUpdating, msg)
		setCondition(status, kubevirtv1.KubeVirtConditionDegraded, corev1.ConditionTrue, ReasonUpdating, msg)
		return
	}
	msg := fmt.Sprintf("Deploying version %s with registry %s (%s)", status.TargetKubeVirtVersion, status.TargetKubeVirtRegistry, progress)
	setCondition(status, kubevirtv1.KubeVirtConditionAvailable, corev1.ConditionFalse, ReasonDeploying, msg)
	setCondition(status, kubevirtv1.KubeVirtConditionProgressing, corev1.ConditionTrue, ReasonDeploying, msg)
	setCondition(status, kubevirtv1.KubeVirtConditionDegraded, corev1.ConditionFalse, ReasonDeploying, msg)
}

// setCondition sets a KubeVirt condition, moving its transition time only when the status changes.
func setCondition(st *kubevirtv1.KubeVirtStatus, typ kubevirtv1.KubeVirtConditionType, status corev1.ConditionStatus, reason, msg string) {
	now := metav1.Now()
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		if c.Status != status || c.Reason != reason || c.Message != msg {
			c.LastProbeTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, kubevirtv1.KubeVirtCondition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: now, LastProbeTime: now,
	})
}
