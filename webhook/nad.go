package webhook

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/v1beta1"
)

// +kubebuilder:webhook:path=/validate-k8s-cni-cncf-io-v1-networkattachmentdefinition,mutating=false,failurePolicy=ignore,sideEffects=None,groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=delete,versions=v1,name=nad.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// NADValidator protects the NetworkAttachmentDefinition the KubeVirt CR uses for migrations,
// whoever rendered it (migranet, Harvester, an admin or operator under HCO). Its scope is every
// NAD of the KubeVirt namespace and its failure policy Ignore: with migranet down, the owner of the
// network (Harvester's removeOldNad, an admin) is never held up; the settings controller renders
// migranet's own NAD again if it was deleted meanwhile.
type NADValidator struct {
	Reader            client.Reader
	KubeVirtNamespace string
	// APIReader, when set, reads the KubeVirt CR again from the API server before a refusal: the
	// controller that moved the CR away from the NAD (migranet's, or Harvester's, which deletes
	// its old NAD right after its CR update and never retries) may be ahead of this replica's
	// cache.
	APIReader client.Reader
	// Metrics counts the decisions on deletes; nil counts nothing.
	Metrics *Metrics
}

// ValidateCreate admits every create.
func (v *NADValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate admits every update.
func (v *NADValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete refuses deleting the NAD that KubeVirt's migrations.network names, whoever
// rendered it and whatever migranet's setting says now: in HCO mode the KubeVirt CR keeps naming a
// NAD migranet's value moved away from until HCO copies the field (indefinitely while HCO is
// degraded), and in the mirror modes the source may lag. A refusal is decided on the KubeVirt CR
// as the API server holds it (APIReader), never on this replica's cache alone: a controller that
// just moved the CR away from the NAD (migranet's own cleanup, Harvester's removeOldNad) may be
// ahead of the cache.
func (v *NADValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	nad, ok := obj.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		v.Metrics.count(WebhookNAD, RuleNone, ResultError)
		return nil, fmt.Errorf("expected a NetworkAttachmentDefinition, got %T", obj)
	}
	if nad.Namespace != v.KubeVirtNamespace {
		v.Metrics.count(WebhookNAD, RuleNone, ResultAllowed)
		return nil, nil
	}
	kv, err := clusterread.KubeVirtCR(ctx, v.Reader, v.KubeVirtNamespace, client.UnsafeDisableDeepCopy)
	if err != nil {
		v.Metrics.count(WebhookNAD, RuleNone, ResultError)
		return nil, apierrors.NewInternalError(err)
	}
	if kv != nil && v.APIReader != nil && ValidateNADDelete(nad.Name, settings.MigrationNetworkOf(kv), "") != nil {
		if kv, err = clusterread.KubeVirtCR(ctx, v.APIReader, v.KubeVirtNamespace); err != nil {
			v.Metrics.count(WebhookNAD, RuleNone, ResultError)
			return nil, apierrors.NewInternalError(err)
		}
	}
	if kv != nil {
		if err := ValidateNADDelete(nad.Name, settings.MigrationNetworkOf(kv), v.decider(ctx)); err != nil {
			v.Metrics.count(WebhookNAD, RuleActiveNetwork, ResultDenied)
			return nil, apierrors.NewForbidden(nadv1.SchemeGroupVersion.WithResource("network-attachment-definitions").GroupResource(), settings.ShortenName(nad.Name), err)
		}
	}
	v.Metrics.count(WebhookNAD, RuleNone, ResultAllowed)
	return nil, nil
}

// decider names what to edit to change the network in force: the object status.source names
// (Harvester's setting, HCO's HyperConverged CR), else migranet's own setting.
func (v *NADValidator) decider(ctx context.Context) string {
	s := &v1beta1.Setting{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s, client.UnsafeDisableDeepCopy); err == nil && s.Status.Source != nil && s.Status.Source.Setting != "" {
		return s.Status.Source.Setting
	}
	return ""
}

// ValidateNADDelete refuses deleting the NetworkAttachmentDefinition name (in the KubeVirt
// namespace) while the KubeVirt CR's spec.configuration.migrations.network, activeNetwork, names it.
// decider is what to edit instead ("" : migranet's setting vm-migration-network).
func ValidateNADDelete(name, activeNetwork, decider string) error {
	if activeNetwork == "" || name != activeNetwork {
		return nil
	}
	change := "change or clear the setting " + v1beta1.MigrationNetwork + " instead, and its controller deletes this NAD once KubeVirt no longer uses it"
	if decider != "" {
		change = "change the migration network on " + decider + " first (it decides the network here), then delete this NAD once the KubeVirt CR no longer names it"
	}
	return fmt.Errorf("NetworkAttachmentDefinition %s is the migration network the KubeVirt CR names in "+
		"spec.configuration.migrations.network: every virt-handler uses it, and deleting it breaks live migration; %s",
		name, change)
}
