package hcomode

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// HCO's names (hyperconverged-cluster-operator v1.18.1): the API group, the kind, and the one name
// its CRD allows (metadata.name pattern in deploy/crds/hco00.crd.yaml).
const (
	Group    = "hco.kubevirt.io"
	Kind     = "HyperConverged"
	Resource = "hyperconvergeds"
	Name     = "kubevirt-hyperconverged"
)

// HyperConvergedOwner is kv's controller owner reference when it is a HyperConverged, else nil.
func HyperConvergedOwner(kv *kubevirtv1.KubeVirt) *metav1.OwnerReference {
	if kv == nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(kv)
	if ref == nil || ref.Kind != Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != Group {
		return nil
	}
	return ref
}
