package cluster

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Scheme knows the built-in kinds, CRDs, KubeVirt, NetworkAttachmentDefinition and Setting.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, kubevirtv1.AddToScheme,
		nadv1.AddToScheme, v1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			// The scheme builders above only fail on a programming error (a kind registered twice).
			panic(err)
		}
	}
	return s
}
