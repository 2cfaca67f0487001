package webhook

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// CacheOptions narrow the manager's informers to what migranet reads: virt-handler pods and the KubeVirt
// CR, NADs and HCO's HyperConverged CR of the KubeVirt namespace only (the RBAC of the last is a
// Role there), and no managed fields on anything.
func CacheOptions(kubevirtNamespace string) cache.Options {
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
	for _, v := range []string{hcomode.V1beta1, hcomode.V1} {
		f, _ := hcomode.FieldOf(v)
		opts.ByObject[f.New()] = cache.ByObject{Namespaces: inKubeVirt}
	}
	return opts
}
