package webhook

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// CacheOptions narrow the manager's informers to what migranet reads: virt-handler pods and the KubeVirt
// CR, NADs and HCO's HyperConverged CR of the KubeVirt namespace only (the RBAC of the last is a
// Role there), and no managed fields on anything.
//
// hc is the HyperConverged kind of the served version in HCO mode; nil outside it (its informer
// is never started, and a GVK the API server does not serve would stop the manager's start).
func CacheOptions(kubevirtNamespace string, hc client.Object) cache.Options {
	inKubeVirt := map[string]cache.Config{kubevirtNamespace: {}}
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Namespaces: inKubeVirt,
				Label:      labels.SelectorFromSet(labels.Set{settings.VirtHandlerLabel: settings.VirtHandlerValue}),
			},
			&kubevirtv1.KubeVirt{}:               {Namespaces: inKubeVirt},
			&kubevirtv1.VirtualMachineInstance{}: {Transform: migrationcheck.TrimVMI},
			&nadv1.NetworkAttachmentDefinition{}: {Namespaces: inKubeVirt},
		},
	}
	if hc != nil {
		opts.ByObject[hc] = cache.ByObject{Namespaces: inKubeVirt}
	}
	return opts
}
