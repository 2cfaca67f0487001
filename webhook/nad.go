package webhook

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
)

// +kubebuilder:webhook:path=/validate-k8s-cni-cncf-io-v1-networkattachmentdefinition,mutating=false,failurePolicy=fail,sideEffects=None,groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=delete,versions=v1,name=nad.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// NADValidator protects the NetworkAttachmentDefinition the KubeVirt CR uses for migrations.
type NADValidator struct {
	Reader            client.Reader
	KubeVirtNamespace string
}

// ValidateCreate admits every create.
func (v *NADValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate admits every update.
func (v *NADValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete refuses deleting the NAD that KubeVirt's migrations.network names.
func (v *NADValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	nad, ok := obj.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		return nil, fmt.Errorf("expected a NetworkAttachmentDefinition, got %T", obj)
	}
	if nad.Namespace != v.KubeVirtNamespace {
		return nil, nil
	}
	kvs := &kubevirtv1.KubeVirtList{}
	if err := v.Reader.List(ctx, kvs, client.InNamespace(v.KubeVirtNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	for i := range kvs.Items {
		if err := ValidateNADDelete(nad.Name, settings.MigrationNetworkOf(&kvs.Items[i])); err != nil {
			return nil, apierrors.NewForbidden(nadv1.SchemeGroupVersion.WithResource("network-attachment-definitions").GroupResource(), nad.Name, err)
		}
	}
	return nil, nil
}
