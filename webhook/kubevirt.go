package webhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// +kubebuilder:webhook:path=/validate-kubevirt-io-v1-kubevirt,mutating=false,failurePolicy=ignore,sideEffects=None,groups=kubevirt.io,resources=kubevirts,verbs=update,versions=v1,name=kubevirt.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// KubeVirtValidator warns, and never denies, when the KubeVirt CR's migrations.network is changed
// by hand to something the vm-migration-network setting does not say.
type KubeVirtValidator struct {
	Reader client.Reader
	// Metrics counts the decisions on updates; nil counts nothing.
	Metrics *Metrics
	// HCO: HCO mode, where HCO writes the field from the HyperConverged CR and migranet never
	// puts it back; nothing to warn about.
	HCO bool
}

// ValidateCreate admits every create.
func (v *KubeVirtValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate returns warnings only.
func (v *KubeVirtValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	oldKV, ok1 := oldObj.(*kubevirtv1.KubeVirt)
	newKV, ok2 := newObj.(*kubevirtv1.KubeVirt)
	if !ok1 || !ok2 {
		return v.Metrics.notJudged(WebhookKubeVirt, fmt.Errorf("expected KubeVirt objects, got %T and %T", oldObj, newObj)), nil
	}
	s := &v1beta1.Setting{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		v.Metrics.count(WebhookKubeVirt, RuleNone, ResultAllowed)
		return nil, nil
	}
	eff := settings.EffectiveNetwork(s)
	if len(eff.Errs) > 0 || settings.Sourced(s) || v.HCO {
		// In Harvester mode Harvester's controller writes the field, and migranet only mirrors it.
		v.Metrics.count(WebhookKubeVirt, RuleNone, ResultAllowed)
		return nil, nil
	}
	warnings := KubeVirtUpdateWarnings(oldKV, newKV, eff.NAD)
	v.Metrics.simple(WebhookKubeVirt, RuleNetworkMismatch, warnings, nil)
	return warnings, nil
}

// ValidateDelete admits every delete.
func (v *KubeVirtValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// KubeVirtUpdateWarnings warns, never denies, when an update changes the KubeVirt CR's
// spec.configuration.migrations.network to something other than wantNetwork, the NAD the setting
// renders to ("" = unset: the setting is empty and migrations use the pod network).
func KubeVirtUpdateWarnings(oldKV, newKV *kubevirtv1.KubeVirt, wantNetwork string) []string {
	if newKV == nil {
		return nil
	}
	got := settings.MigrationNetworkOf(newKV)
	if got == settings.MigrationNetworkOf(oldKV) || got == wantNetwork {
		return nil
	}
	back := "put it back to " + wantNetwork
	if wantNetwork == "" {
		back = "unset it again (the setting is empty: migrations use the pod network)"
	}
	gotText := fmt.Sprintf("%q", settings.ShortenName(got))
	if got == "" {
		gotText = "unset"
	}
	return []string{fmt.Sprintf("spec.configuration.migrations.network is %s, which the setting %s does not say: "+
		"the migranet settings controller will %s; change the setting %s instead",
		gotText, v1beta1.MigrationNetwork, back, v1beta1.MigrationNetwork)}
}
