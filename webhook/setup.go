package webhook

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/slots"
)

// Options configure the admission webhooks.
type Options struct {
	// KubeVirtNamespace holds the KubeVirt CR and the migration network's NAD.
	KubeVirtNamespace string
	// Snapshots is the network controller's readiness snapshot.
	Snapshots *health.Store
	// Metrics counts admission decisions; nil counts nothing.
	Metrics *Metrics
	// Recorder records a Warning event on the VMI of each refused migration; nil records none.
	Recorder record.EventRecorder
	// Pods is the pod cache (migrationcheck.NewPodCache) the feasibleTarget rule reads room on the nodes from;
	// nil leaves room unjudged.
	Pods *migrationcheck.PodCache
	// Paths is the probe agents' path health (netcontroller's path observer publishes it); nil
	// leaves rule pathHealthy nothing to judge.
	Paths *health.PathStore
	// Namespace is migranet's: the inbound slot reservations live there (webhook/slots); ""
	// judges inbound slots with each replica's cache alone.
	Namespace string
	// Mode is who decides the migration network (settings/decider): in Harvester mode migranet's
	// own setting takes no value; in HCO mode HCO writes the KubeVirt CR, so its changes of the
	// migration network draw no warning. "" is decider.ModeOwn.
	Mode decider.Mode
}

// slotStore is the reservations' store in namespace, nil without one.
func slotStore(mgr ctrl.Manager, namespace string) *slots.Store {
	if namespace == "" {
		return nil
	}
	return &slots.Store{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: namespace}
}

// Setup registers every admission webhook with the manager's webhook server. Admission reads the
// informer-backed migrationcheck.Informers, started here with the manager's cache.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	_, err := SetupState(ctx, mgr, opts)
	return err
}

// SetupState is Setup returning the admission state it started (make bench serves it again with
// other path health).
func SetupState(ctx context.Context, mgr ctrl.Manager, opts Options) (*migrationcheck.Informers, error) {
	state, err := migrationcheck.NewInformers(ctx, mgr.GetCache(), opts.KubeVirtNamespace, opts.Pods, opts.Snapshots, opts.Paths)
	if err != nil {
		return nil, err
	}
	state.ConfirmMissingVMIs(mgr.GetAPIReader())
	cache := mgr.GetCache()
	// The setting webhook reads the Service ranges from the cache: start that informer with the
	// manager, not on the first setting edit (none where the API is not served).
	if _, err := cache.GetInformer(ctx, &networkingv1.ServiceCIDR{}); err != nil && !meta.IsNoMatchError(err) {
		return nil, err
	}
	hooks := []struct {
		obj       runtime.Object
		validator admission.CustomValidator
	}{
		{&v1beta1.Setting{}, &SettingValidator{Reader: cache, APIReader: mgr.GetAPIReader(), KubeVirtNamespace: opts.KubeVirtNamespace, State: state, Metrics: opts.Metrics, Harvester: opts.Mode == decider.ModeHarvester}},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &MigrationValidator{State: state, Metrics: opts.Metrics, Recorder: opts.Recorder, Slots: slotStore(mgr, opts.Namespace)}},
		{&nadv1.NetworkAttachmentDefinition{}, &NADValidator{Reader: cache, APIReader: mgr.GetAPIReader(), KubeVirtNamespace: opts.KubeVirtNamespace, Metrics: opts.Metrics}},
		{&kubevirtv1.KubeVirt{}, &KubeVirtValidator{Reader: cache, Metrics: opts.Metrics, HCO: opts.Mode == decider.ModeHCO}},
	}
	for _, h := range hooks {
		if err := ctrl.NewWebhookManagedBy(mgr).For(h.obj).WithValidator(h.validator).Complete(); err != nil {
			return nil, err
		}
	}
	mgr.GetWebhookServer().Register(HyperConvergedPath, &crwebhook.Admission{Handler: &HyperConvergedValidator{
		Reader: cache, APIReader: mgr.GetAPIReader(), State: state, KubeVirtNamespace: opts.KubeVirtNamespace, Metrics: opts.Metrics}})
	mgr.GetWebhookServer().Register(SteeringPath, &crwebhook.Admission{Handler: &TargetSteerer{
		State: state, Decoder: admission.NewDecoder(mgr.GetScheme()), Metrics: opts.Metrics, Recorder: opts.Recorder}})
	return state, nil
}
