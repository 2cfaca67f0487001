package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings/hcomode"
)

// HCO's names for the KubeVirt CR it creates (hyperconverged-cluster-operator v1.18.1
// controllers/handlers/kubevirt.go NewKubeVirtWithNameOnly: "kubevirt-" + the HyperConverged's
// name) and the HyperConverged CR's one allowed name.
const (
	HyperConvergedName = hcomode.Name
	HCOKubeVirtName    = "kubevirt-" + HyperConvergedName
)

// requests of HCOKubeVirtHandler: one for a change of the HyperConverged CR (HCO's own
// reconcile, req.HCOTriggered) and one for a change of the KubeVirt CR it watches.
const (
	hcoTriggered  = "hyperconverged"
	kubeVirtEvent = "kubevirt"
)

// HCOKubeVirtHandler stands in for the KubeVirt handler of HCO (hyperconverged-cluster-operator
// v1.18.1), the part of HCO that owns the KubeVirt CR:
//   - it derives the KubeVirt CR's whole spec from the HyperConverged CR (NewKubeVirt, getKVConfig):
//     here Base (the spec the CR had when the stand-in started: HCO's opinionated values) with
//     spec.configuration.migrations from liveMigrationConfig, field by field as
//     hcLiveMigrationToKv copies them (bandwidthPerMigration parsed as a quantity,
//     completionTimeoutPerGiB, parallelOutboundMigrationsPerNode, parallelMigrationsPerCluster,
//     progressTimeout, network, allowAutoConverge, allowPostCopy), the result round-tripped through
//     JSON (reformatobj.ReformatObj);
//   - on any difference (kubevirtHooks.UpdateCR: reflect.DeepEqual of the specs) it copies its
//     own spec over the CR's and Updates it, whoever changed what;
//   - a write it had to make because the KubeVirt CR changed, not the HyperConverged CR
//     (!req.HCOTriggered), is an out-of-band modification: HCO counts it in
//     kubevirt_hco_out_of_band_modifications_total{component_name="kubevirt"} and alerts
//     (KubeVirtCRModified); OutOfBand counts them here.
//
// It does not create the CR (the environment bootstraps it owned by the HyperConverged CR, as HCO
// does) and plays none of HCO's other operands, conditions or its own webhook.
type HCOKubeVirtHandler struct {
	Client    client.Client
	Namespace string
	// Base is the KubeVirt spec HCO derives from everything but liveMigrationConfig.
	Base kubevirtv1.KubeVirtSpec

	outOfBand, updates atomic.Int64
	frozen             atomic.Bool
}

// Freeze stops (true) or resumes (false) the stand-in's copying, as a degraded HCO whose reconcile
// fails before its KubeVirt handler runs: while frozen the KubeVirt CR keeps what it names. On
// resume it catches up within a second, as HCO's periodic requeue would.
func (h *HCOKubeVirtHandler) Freeze(on bool) { h.frozen.Store(on) }

// OutOfBand is the count of kubevirt_hco_out_of_band_modifications_total for the KubeVirt CR.
func (h *HCOKubeVirtHandler) OutOfBand() int64 { return h.outOfBand.Load() }

// Updates counts every Update of the KubeVirt CR the stand-in made.
func (h *HCOKubeVirtHandler) Updates() int64 { return h.updates.Load() }

// SetupWithManager watches the HyperConverged CR and the KubeVirt CR of Namespace.
func (h *HCOKubeVirtHandler) SetupWithManager(mgr ctrl.Manager) error {
	f, _ := hcomode.FieldOf(hcomode.V1beta1)
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == h.Namespace })
	as := func(name string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
		})
	}
	return ctrl.NewControllerManagedBy(mgr).Named("sim-hco-kubevirt-handler").
		Watches(f.New(), as(hcoTriggered), builder.WithPredicates(inNamespace)).
		Watches(&kubevirtv1.KubeVirt{}, as(kubeVirtEvent), builder.WithPredicates(inNamespace)).
		Complete(h)
}

// Reconcile brings the KubeVirt CR's spec back to what the HyperConverged CR derives.
func (h *HCOKubeVirtHandler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if h.frozen.Load() {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	f, _ := hcomode.FieldOf(hcomode.V1beta1)
	hc := f.New()
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: HyperConvergedName}, hc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want, err := DeriveKubeVirtSpec(h.Base, hc)
	if err != nil {
		return reconcile.Result{}, nil // HCO reports it on its conditions and retries nothing until the HC changes
	}
	kv := &kubevirtv1.KubeVirt{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: HCOKubeVirtName}, kv); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if reflect.DeepEqual(kv.Spec, want) {
		return reconcile.Result{}, nil
	}
	kv.Spec = want
	if err := h.Client.Update(ctx, kv); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, err
	}
	h.updates.Add(1)
	if req.Name != hcoTriggered {
		h.outOfBand.Add(1)
	}
	return reconcile.Result{}, nil
}

// DeriveKubeVirtSpec is the KubeVirt spec HCO wants: base with the migrations of the
// HyperConverged CR's liveMigrationConfig.
func DeriveKubeVirtSpec(base kubevirtv1.KubeVirtSpec, hc *unstructured.Unstructured) (kubevirtv1.KubeVirtSpec, error) {
	spec := *base.DeepCopy()
	lm, _, _ := unstructured.NestedMap(hc.Object, "spec", "liveMigrationConfig")
	var in struct {
		BandwidthPerMigration             *string `json:"bandwidthPerMigration"`
		CompletionTimeoutPerGiB           *int64  `json:"completionTimeoutPerGiB"`
		ParallelOutboundMigrationsPerNode *uint32 `json:"parallelOutboundMigrationsPerNode"`
		ParallelMigrationsPerCluster      *uint32 `json:"parallelMigrationsPerCluster"`
		ProgressTimeout                   *int64  `json:"progressTimeout"`
		Network                           *string `json:"network"`
		AllowAutoConverge                 *bool   `json:"allowAutoConverge"`
		AllowPostCopy                     *bool   `json:"allowPostCopy"`
	}
	raw, _ := json.Marshal(lm)
	if err := json.Unmarshal(raw, &in); err != nil {
		return spec, err
	}
	m := &kubevirtv1.MigrationConfiguration{
		CompletionTimeoutPerGiB: in.CompletionTimeoutPerGiB, ParallelOutboundMigrationsPerNode: in.ParallelOutboundMigrationsPerNode,
		ParallelMigrationsPerCluster: in.ParallelMigrationsPerCluster, ProgressTimeout: in.ProgressTimeout, Network: in.Network,
		AllowAutoConverge: in.AllowAutoConverge, AllowPostCopy: in.AllowPostCopy,
	}
	if in.BandwidthPerMigration != nil {
		q, err := resource.ParseQuantity(*in.BandwidthPerMigration)
		if err != nil {
			return spec, fmt.Errorf("failed to parse the LiveMigrationConfig.bandwidthPerMigration field; %w", err)
		}
		m.BandwidthPerMigration = &q
	}
	spec.Configuration.MigrationConfiguration = m
	// reformatobj.ReformatObj: what the API server stores reads back equal.
	raw, err := json.Marshal(spec)
	if err != nil {
		return spec, err
	}
	out := kubevirtv1.KubeVirtSpec{}
	return out, json.Unmarshal(raw, &out)
}

// NewHyperConverged is the HyperConverged CR of namespace as an admin creates it, with the
// liveMigrationConfig the CRD's defaults fill in.
func NewHyperConverged(namespace string) *unstructured.Unstructured {
	f, _ := hcomode.FieldOf(hcomode.V1beta1)
	u := f.New()
	u.SetNamespace(namespace)
	u.SetName(HyperConvergedName)
	u.Object["spec"] = map[string]any{}
	return u
}

// HyperConvergedOwnerRef is the controller reference HCO puts on the operands it creates
// (controllerutil.SetControllerReference with the HyperConverged CR).
func HyperConvergedOwnerRef(hc *unstructured.Unstructured) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: hc.GetAPIVersion(), Kind: hc.GetKind(), Name: hc.GetName(), UID: hc.GetUID(),
		Controller: &yes, BlockOwnerDeletion: &yes}
}
