package migrationcheck

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Informers is the State the admission webhook reads: every answer comes from an informer store
// of the manager's cache, derived once per informer event (the nodes with their index, the
// KubeVirt CR in force, the parsed settings) or looked up by key and index (VMIs, VMIMs). An
// admission review makes an API request only to confirm a VMI the store does not hold.
type Informers struct {
	lookup   *lookup
	nodes    *nodeSnapshot
	kubeVirt *informed[inForce]
	settings *informed[SettingsView]
	pods     PodView
	network  *health.Store
	paths    *health.PathStore
	// traffic is the migrations into and out of each node, counted again after an event that can
	// change it; nil without a pod cache.
	traffic *informed[Traffic]
	// api, when set, confirms a VMI the store does not hold (ConfirmMissingVMIs).
	api client.Reader
	// policy, when set, replaces the migration policy read from the settings (WithPolicy).
	policy *settings.MigrationPolicy
}

// NewInformers starts, with the manager's cache c, the informers admission reads and derives its
// State from them. pods is the pod cache the feasibleTarget rule reads room from (nil: room is
// not judged); network is the network controller's readiness store; paths the probe agents' path
// health (nil: paths are not judged).
func NewInformers(ctx context.Context, c cache.Cache, kubevirtNamespace string, pods *PodCache, network *health.Store, paths *health.PathStore) (*Informers, error) {
	// Start the informers admission reads with the manager, not on the first request.
	for _, obj := range []client.Object{&kubevirtv1.VirtualMachineInstance{}, &corev1.Node{}, &kubevirtv1.KubeVirt{}, &v1beta1.Setting{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	st := &Informers{network: network, paths: paths}
	var err error
	if st.nodes, err = newNodeSnapshot(ctx, c, pods); err != nil {
		return nil, err
	}
	if st.kubeVirt, err = newInformed(ctx, c, &kubevirtv1.KubeVirt{}, func(ctx context.Context) (*inForce, error) {
		kv, err := clusterread.KubeVirtCR(ctx, c, kubevirtNamespace)
		return &inForce{kv}, err
	}); err != nil {
		return nil, err
	}
	if st.settings, err = newInformed(ctx, c, &v1beta1.Setting{}, func(ctx context.Context) (*SettingsView, error) {
		return readSettings(ctx, c)
	}); err != nil {
		return nil, err
	}
	if st.lookup, err = newLookup(ctx, c); err != nil {
		return nil, err
	}
	if pods != nil {
		st.pods = pods
		st.traffic = newDerived(func(context.Context) (*Traffic, error) {
			return CountTraffic(st.lookup.unfinished(), func(ns, name string) *kubevirtv1.VirtualMachineInstance {
				v, _ := st.lookup.vmi(ns, name)
				return v
			}, pods.MigrationTargets), nil
		})
		if err := st.lookup.onTrafficEvent(st.traffic.mark); err != nil {
			return nil, err
		}
		if err := pods.OnTargetPodEvent(ctx, st.traffic.mark); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Traffic implements State: the migrations into and out of each node, nil without a pod cache.
func (s *Informers) Traffic(ctx context.Context) (*Traffic, error) {
	if s.traffic == nil {
		return nil, nil
	}
	return s.traffic.get(ctx)
}

// WithPolicy returns s reading policy instead of the migration-policy setting's: the same
// informers and derived state, shared (make bench serves the steering with and without a budget
// from one cache).
func (s *Informers) WithPolicy(policy *settings.MigrationPolicy) *Informers {
	c := *s
	c.policy = policy
	return &c
}

// VMI implements State.
func (s *Informers) VMI(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	return s.lookup.confirmedVMI(ctx, s.api, namespace, name)
}

// ConfirmMissingVMIs makes s ask api (the manager's API reader) before it calls a VMI absent.
func (s *Informers) ConfirmMissingVMIs(api client.Reader) { s.api = api }

// MigrationsOf implements State.
func (s *Informers) MigrationsOf(_ context.Context, namespace, vmiName string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	return s.lookup.migrationsOf(namespace, vmiName)
}

// inForce holds the KubeVirt CR in force, nil for none: a derivation of "no CR" is a value too.
type inForce struct{ kv *kubevirtv1.KubeVirt }

// KubeVirt implements State: the CR in force, derived again only after a KubeVirt event.
func (s *Informers) KubeVirt(ctx context.Context) (*kubevirtv1.KubeVirt, error) {
	v, err := s.kubeVirt.get(ctx)
	if err != nil {
		return nil, err
	}
	return v.kv, nil
}

// Settings implements State.
func (s *Informers) Settings(ctx context.Context) (*SettingsView, error) {
	v, err := s.settings.get(ctx)
	if err != nil || s.policy == nil {
		return v, err
	}
	c := *v
	c.Policy = s.policy
	return &c, nil
}

// Nodes implements State.
func (s *Informers) Nodes(context.Context) (*NodeSet, error) { return s.nodes.load(), nil }

// Pods implements State.
func (s *Informers) Pods(context.Context) (PodView, error) { return s.pods, nil }

// Network implements State.
func (s *Informers) Network() *health.Snapshot { return s.network.Load() }

// WithPaths returns s reading path health from paths instead: the same informers and derived
// state, shared (make bench serves the hard case with and without probe results from one cache).
func (s *Informers) WithPaths(paths *health.PathStore) *Informers {
	c := *s
	c.paths = paths
	return &c
}

// Paths implements State: the health the path observer last published (PathStore is nil-safe).
func (s *Informers) Paths(context.Context) *health.PathHealth { return s.paths.Load() }

// readSettings derives the settings view from r, reading both settings (absent: nil).
func readSettings(ctx context.Context, r client.Reader) (*SettingsView, error) {
	var policy, network *v1beta1.Setting
	list := &v1beta1.SettingList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range list.Items {
		switch s := &list.Items[i]; s.Name {
		case v1beta1.MigrationPolicy:
			policy = s
		case v1beta1.MigrationNetwork:
			network = s
		}
	}
	return ViewOf(policy, network), nil
}
