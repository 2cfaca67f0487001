package webhook

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Options configure the admission webhooks.
type Options struct {
	// KubeVirtNamespace holds the KubeVirt CR and the migration network's NAD.
	KubeVirtNamespace string
	// Snapshots is the network controller's readiness snapshot.
	Snapshots *netcontroller.Store
}

// NewScheme returns a scheme with every kind migranet reads or writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, kubevirtv1.AddToScheme, nadv1.AddToScheme, v1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Setup registers every admission webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewWebhookManagedBy(mgr).For(&v1beta1.Setting{}).
		WithValidator(&SettingValidator{Reader: mgr.GetCache(), KubeVirtNamespace: opts.KubeVirtNamespace}).
		Complete()
}
