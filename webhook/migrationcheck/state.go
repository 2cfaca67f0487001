package migrationcheck

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// State is what the VMIM rules read of the cluster, behind one interface with two fillings: the
// admission webhook reads informer stores (Informers), `migranet preflight` the API server
// (APIState). The rules themselves (EvaluateCreate, EvaluateDelete) read only the CreateInput or
// DeleteInput that Gather builds from a State; they never read the API.
type State interface {
	// VMI returns the VirtualMachineInstance namespace/name, nil when there is none.
	VMI(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachineInstance, error)
	// MigrationsOf returns the VMIMs in namespace whose spec.vmiName is vmiName.
	MigrationsOf(ctx context.Context, namespace, vmiName string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error)
	// KubeVirt returns the KubeVirt CR in force (settings.OldestKubeVirt), nil for none.
	KubeVirt(ctx context.Context) (*kubevirtv1.KubeVirt, error)
	// Settings returns what admission reads of the two settings.
	Settings(ctx context.Context) (*SettingsView, error)
	// Nodes returns the nodes in name order, with their index when the State keeps one.
	Nodes(ctx context.Context) (*NodeSet, error)
	// Pods returns the pods' view, nil when they are unknown (room on the nodes is then not
	// judged, and the answer says so).
	Pods(ctx context.Context) (PodView, error)
	// Network returns the network controller's readiness snapshot, nil before its first
	// observation.
	Network() *health.Snapshot
	// Paths returns the probe agents' path health of the migration network in force, nil when
	// none is known (no agent reported, or it could not be read): missing health data never
	// refuses a migration.
	Paths(ctx context.Context) *health.PathHealth
	// Traffic returns the migrations streaming into and out of each node, nil when they are not
	// counted (the steering then prefers nothing by the nodes' budgets).
	Traffic(ctx context.Context) (*Traffic, error)
}

// SettingsView is what admission reads of the two settings.
type SettingsView struct {
	// Policy is the migration policy; nil means the default (every rule enforced).
	Policy *settings.MigrationPolicy
	// Hash is the migration network's current hash, "" when disabled or invalid.
	Hash string
}

// ViewOf derives the SettingsView from the migration-policy and vm-migration-network settings
// (nil: absent). It is the one derivation both States use.
func ViewOf(policy, network *v1beta1.Setting) *SettingsView {
	v := &SettingsView{}
	if policy != nil {
		v.Policy, _ = settings.ParseMigrationPolicy(settings.EffectiveValue(policy), field.NewPath("value"))
	}
	if network != nil {
		v.Hash = settings.EffectiveNetwork(network).Hash
	}
	return v
}

// NodeSet is one immutable view of the nodes, in name order, and its index (nil: the rules walk
// the nodes).
type NodeSet struct {
	Nodes []*corev1.Node
	index *nodeIndex
}

// GatherCreate builds, from st, everything the create rules look at for vmim requested by user.
func GatherCreate(ctx context.Context, st State, vmim *kubevirtv1.VirtualMachineInstanceMigration, user string) (*CreateInput, error) {
	in := &CreateInput{VMIM: vmim, User: user, Network: st.Network(), Paths: st.Paths(ctx), Now: time.Now()}
	var err error
	if in.VMI, err = st.VMI(ctx, vmim.Namespace, vmim.Spec.VMIName); err != nil {
		return nil, err
	}
	if in.OtherMigrations, err = st.MigrationsOf(ctx, vmim.Namespace, vmim.Spec.VMIName); err != nil {
		return nil, err
	}
	if in.KubeVirt, err = st.KubeVirt(ctx); err != nil {
		return nil, err
	}
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	if nodes != nil {
		in.Nodes, in.index = nodes.Nodes, nodes.index
	}
	if in.Pods, err = st.Pods(ctx); err != nil {
		return nil, err
	}
	sv := settingsOf(ctx, st)
	in.Policy, in.CurrentHash = sv.Policy, sv.Hash
	if in.Policy != nil && in.Policy.Budget != nil {
		// Counting that fails leaves the budget out (no slot judged, no node preferred against),
		// never the request unjudged.
		in.Traffic, _ = st.Traffic(ctx)
	}
	return in, nil
}

// GatherDelete builds, from st, what the cancel rule looks at for vmim.
func GatherDelete(ctx context.Context, st State, vmim *kubevirtv1.VirtualMachineInstanceMigration) (*DeleteInput, error) {
	vmi, err := st.VMI(ctx, vmim.Namespace, vmim.Spec.VMIName)
	if err != nil {
		return nil, err
	}
	return &DeleteInput{VMIM: vmim, VMI: vmi, Policy: settingsOf(ctx, st).Policy}, nil
}

// settingsOf reads st's settings; settings that cannot be read count as absent (the default
// policy, no migration network), as a missing Setting does.
func settingsOf(ctx context.Context, st State) *SettingsView {
	if sv, err := st.Settings(ctx); err == nil && sv != nil {
		return sv
	}
	return &SettingsView{}
}
