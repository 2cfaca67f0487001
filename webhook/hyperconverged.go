package webhook

import (
	"context"
	"fmt"
	"net/http"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// HyperConvergedPath is where the HyperConverged webhook is served.
const HyperConvergedPath = "/validate-hco-kubevirt-io-hyperconverged"

// +kubebuilder:webhook:path=/validate-hco-kubevirt-io-hyperconverged,mutating=false,failurePolicy=ignore,sideEffects=None,groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=create;update,versions=v1beta1;v1,name=hyperconverged.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// HyperConvergedValidator judges the migration network a create or update of HCO's
// HyperConverged CR chooses (rule hcoNetwork, hcomode.JudgeNetwork), which neither HCO nor
// KubeVirt checks. It judges only a changed network field and answers every other request at
// once; its failure policy is Ignore, so with migranet down HCO's users and HCO itself are never
// held up. It reads only the cache.
type HyperConvergedValidator struct {
	Reader            client.Reader
	State             migrationcheck.State
	KubeVirtNamespace string
	// Metrics counts the decisions; nil counts nothing.
	Metrics *Metrics
}

// Handle answers one HyperConverged create or update review.
func (v *HyperConvergedValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj, old := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		v.Metrics.count(WebhookHyperConverged, RuleNone, ResultError)
		return admission.Allowed("not judged: the object did not decode: " + err.Error())
	}
	f, ok := hcomode.FieldOf(req.Kind.Version)
	if req.Kind.Group != hcomode.Group || req.Kind.Kind != hcomode.Kind || !ok || req.Namespace != v.KubeVirtNamespace {
		v.Metrics.count(WebhookHyperConverged, RuleNone, ResultAllowed)
		return admission.Allowed("not judged: not a HyperConverged of a known version in the KubeVirt namespace")
	}
	network := f.Get(obj)
	if len(req.OldObject.Raw) > 0 && old.UnmarshalJSON(req.OldObject.Raw) == nil && f.Get(old) == network {
		v.Metrics.count(WebhookHyperConverged, RuleNone, ResultAllowed)
		return admission.Allowed("")
	}
	errs, warnings, err := v.judge(ctx, f, network)
	if err != nil {
		v.Metrics.count(WebhookHyperConverged, RuleNone, ResultError)
		return admission.Allowed("not judged: reading the cache: " + err.Error())
	}
	view, err := v.State.Settings(ctx)
	mode := settings.ModeEnforce
	if err == nil {
		mode = view.Policy.ModeFor(settings.RuleHCONetwork, req.UserInfo.Username)
	}
	switch {
	case len(errs) == 0 || mode == settings.ModeOff:
		v.Metrics.simple(WebhookHyperConverged, string(settings.RuleHCONetwork), warnings, nil)
		return admission.Allowed("").WithWarnings(warnings...)
	case mode == settings.ModeWarn:
		for _, e := range errs {
			warnings = append(warnings, "migranet "+string(settings.RuleHCONetwork)+" (warn): "+e.Error())
		}
		v.Metrics.count(WebhookHyperConverged, string(settings.RuleHCONetwork), ResultWarned)
		return admission.Allowed("").WithWarnings(warnings...)
	}
	v.Metrics.count(WebhookHyperConverged, string(settings.RuleHCONetwork), ResultDenied)
	for i := range errs {
		// kubectl prints the causes: each says whose rule refused it.
		errs[i].Detail = "migranet " + string(settings.RuleHCONetwork) + ": " + errs[i].Detail
	}
	gk := schema.GroupKind{Group: hcomode.Group, Kind: hcomode.Kind}
	resp := admission.Errored(http.StatusUnprocessableEntity, apierrors.NewInvalid(gk, obj.GetName(), errs))
	resp.Result = &apierrors.NewInvalid(gk, obj.GetName(), errs).ErrStatus
	resp.Result.Message = "migranet " + string(settings.RuleHCONetwork) + ": " + resp.Result.Message
	return resp.WithWarnings(warnings...)
}

// judge reads what JudgeNetwork needs from the cache.
func (v *HyperConvergedValidator) judge(ctx context.Context, f hcomode.Field, network string) (field.ErrorList, []string, error) {
	if network == "" {
		return nil, nil, nil
	}
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := v.Reader.List(ctx, nads, client.InNamespace(v.KubeVirtNamespace)); err != nil {
		return nil, nil, fmt.Errorf("listing NetworkAttachmentDefinitions: %w", err)
	}
	nodes, err := v.State.Nodes(ctx)
	if err != nil {
		return nil, nil, err
	}
	kv, err := v.State.KubeVirt(ctx)
	if err != nil {
		return nil, nil, err
	}
	errs, warnings := hcomode.JudgeNetwork(field.NewPath(f.Path()), network, v.KubeVirtNamespace, nads.Items, settings.ClusterOf(nodes.Nodes, kv, nil, nil))
	return errs, warnings, nil
}
