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
	"github.com/migranet/migranet/settings/v1beta1"
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
	// APIReader, when set, reads the NADs again from the API server before a NotFound refusal:
	// migranet's settings controller renders its NAD and patches the HyperConverged CR right
	// after, and this replica's cache may not hold the NAD yet. nil: the cache alone.
	APIReader client.Reader
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

// judge reads what JudgeNetwork needs from the cache. migranet's own value's NAD is never refused:
// the setting webhook judged that value, and the settings controller renders the NAD before it
// writes the field and keeps it rendered for the hand-back. A NAD the cache lacks is looked for in
// the API server before it is called missing.
func (v *HyperConvergedValidator) judge(ctx context.Context, f hcomode.Field, network string) (field.ErrorList, []string, error) {
	if network == "" || network == v.ownNAD(ctx) {
		return nil, nil, nil
	}
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := v.Reader.List(ctx, nads, client.InNamespace(v.KubeVirtNamespace)); err != nil {
		return nil, nil, fmt.Errorf("listing NetworkAttachmentDefinitions: %w", err)
	}
	if v.APIReader != nil && settings.FindNAD(nads.Items, v.KubeVirtNamespace, network) == nil {
		nad := &nadv1.NetworkAttachmentDefinition{}
		switch err := v.APIReader.Get(ctx, client.ObjectKey{Namespace: v.KubeVirtNamespace, Name: network}, nad); {
		case err == nil:
			nads.Items = append(nads.Items, *nad)
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("reading NetworkAttachmentDefinition %s/%s: %w", v.KubeVirtNamespace, network, err)
		}
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

// ownNAD is the NAD migranet's own value renders to, "" when it has none (or the setting cannot
// be read).
func (v *HyperConvergedValidator) ownNAD(ctx context.Context) string {
	s := &v1beta1.Setting{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s, client.UnsafeDisableDeepCopy); err != nil {
		return ""
	}
	return settings.ValueNetwork(s).NAD
}
