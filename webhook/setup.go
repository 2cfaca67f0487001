package webhook

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Options configure the admission webhooks.
type Options struct {
	// KubeVirtNamespace holds the KubeVirt CR and the migration network's NAD.
	KubeVirtNamespace string
	// Snapshots is the network controller's readiness snapshot.
	Snapshots *netcontroller.Store
	// Metrics counts admission decisions; nil counts nothing.
	Metrics *Metrics
	// Recorder records a Warning event on the VMI of each refused migration; nil records none.
	Recorder record.EventRecorder
	// Pods is the pod cache (NewPodCache) the feasibleTarget rule reads room on the nodes from;
	// nil leaves room unjudged.
	Pods *PodCache
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

// Setup registers every admission webhook with the manager's webhook server, and the cache
// index the migration rules use.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &kubevirtv1.VirtualMachineInstanceMigration{}, vmiNameIndex, func(o client.Object) []string {
		return []string{o.(*kubevirtv1.VirtualMachineInstanceMigration).Spec.VMIName}
	})
	if err != nil {
		return err
	}
	cache := mgr.GetCache()
	// Start the informers admission reads with the manager, not on the first request.
	for _, obj := range []client.Object{&kubevirtv1.VirtualMachineInstance{}, &corev1.Node{}, &kubevirtv1.KubeVirt{}, &v1beta1.Setting{}} {
		if _, err := cache.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	snap, err := newNodeSnapshot(ctx, cache, opts.Pods)
	if err != nil {
		return err
	}
	nodes := NodeLister(snap.get)
	kv, err := newInformed(ctx, cache, &kubevirtv1.KubeVirt{}, readKubeVirt(cache, opts.KubeVirtNamespace))
	if err != nil {
		return err
	}
	sv, err := newInformed(ctx, cache, &v1beta1.Setting{}, readSettings(cache))
	if err != nil {
		return err
	}
	stores, err := newLookup(ctx, cache)
	if err != nil {
		return err
	}
	hooks := []struct {
		obj       runtime.Object
		validator admission.CustomValidator
	}{
		{&v1beta1.Setting{}, &SettingValidator{Reader: cache, Nodes: nodes, KubeVirtNamespace: opts.KubeVirtNamespace, Metrics: opts.Metrics}},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &MigrationValidator{Reader: cache, Nodes: nodes, KubeVirtNamespace: opts.KubeVirtNamespace,
			Snapshots: opts.Snapshots, Metrics: opts.Metrics, Recorder: opts.Recorder, Pods: podView(opts.Pods), nodeState: snap.load,
			kubeVirt: kv.get, settingsView: sv.get, stores: stores}},
		{&nadv1.NetworkAttachmentDefinition{}, &NADValidator{Reader: cache, KubeVirtNamespace: opts.KubeVirtNamespace, Metrics: opts.Metrics}},
		{&kubevirtv1.KubeVirt{}, &KubeVirtValidator{Reader: cache, Metrics: opts.Metrics}},
	}
	for _, h := range hooks {
		if err := ctrl.NewWebhookManagedBy(mgr).For(h.obj).WithValidator(h.validator).Complete(); err != nil {
			return err
		}
	}
	return nil
}

// podView keeps a nil *PodCache a nil PodView.
func podView(p *PodCache) PodView {
	if p == nil {
		return nil
	}
	return p
}
