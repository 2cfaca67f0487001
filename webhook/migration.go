package webhook

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// +kubebuilder:webhook:path=/validate-kubevirt-io-v1-virtualmachineinstancemigration,mutating=false,failurePolicy=ignore,sideEffects=NoneOnDryRun,groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=create;delete,versions=v1,name=vmim.migranet.io,admissionReviewVersions=v1,timeoutSeconds=5

// vmiNameIndex indexes VirtualMachineInstanceMigrations by spec.vmiName.
const vmiNameIndex = "spec.vmiName"

var vmimKind = kubevirtv1.SchemeGroupVersion.WithKind("VirtualMachineInstanceMigration").GroupKind()

// MigrationValidator admits VirtualMachineInstanceMigration create (the rules of
// EvaluateCreate) and delete, which cancels a migration (EvaluateDelete). It reads only the cache.
type MigrationValidator struct {
	Reader            client.Reader
	Nodes             NodeLister
	KubeVirtNamespace string
	Snapshots         *netcontroller.Store
	// Metrics counts the decisions; nil counts nothing.
	Metrics *Metrics
	// Recorder receives a Warning event on the VMI of each refused migration; nil records none.
	Recorder record.EventRecorder
	// Pods gives the VMIs' pods and the nodes' usage; nil leaves room on the nodes unjudged.
	Pods     PodView
	settings settingsMemo
	// nodeState, when set, gives the nodes together with their index (and Nodes is not called);
	// kubeVirt and settingsView, when set, replace the reads of the KubeVirt CR and the settings
	// through Reader. Setup sets all three from informer stores.
	nodeState    func() *nodeState
	kubeVirt     func(context.Context) (*kubeVirtView, error)
	settingsView func(context.Context) (*settingsView, error)
	// stores, when set, replaces the reads of VMIs and VMIMs through Reader.
	stores *lookup
}

// policyAndHash returns the migration policy (nil = default) and the migration network's hash.
// Settings that cannot be read count as absent, as with the reads through Reader.
func (v *MigrationValidator) policyAndHash(ctx context.Context) (*settings.MigrationPolicy, string) {
	if v.settingsView != nil {
		if sv, err := v.settingsView(ctx); err == nil && sv != nil {
			return sv.policy, sv.hash
		}
		return nil, ""
	}
	return v.settings.load(ctx, v.Reader)
}

// ValidateCreate refuses a migration that cannot succeed.
func (v *MigrationValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	vmim, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("expected a VirtualMachineInstanceMigration, got %T", obj)), nil
	}
	in, err := v.createInput(ctx, vmim)
	if err != nil {
		return v.Metrics.notJudged(WebhookVMIMCreate, fmt.Errorf("reading the cache: %w", err)), nil
	}
	ds := EvaluateCreate(*in)
	v.Metrics.decided(WebhookVMIMCreate, ds)
	warnings, err := verdict(vmim, ds, false)
	if err != nil {
		v.recordRefusal(ctx, in.VMI, vmim, ds)
	} else {
		v.recordWarnings(ctx, in.VMI, vmim, warnings)
	}
	return warnings, err
}

// ValidateUpdate admits every update: the rules are about starting and cancelling migrations.
func (v *MigrationValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete refuses cancelling a migration in post-copy, unless forced.
func (v *MigrationValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	vmim, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok {
		return v.Metrics.notJudged(WebhookVMIMDelete, fmt.Errorf("expected a VirtualMachineInstanceMigration, got %T", obj)), nil
	}
	vmi, err := v.vmi(ctx, vmim)
	if err != nil {
		return v.Metrics.notJudged(WebhookVMIMDelete, fmt.Errorf("reading the cache: %w", err)), nil
	}
	policy, _ := v.policyAndHash(ctx)
	ds := EvaluateDelete(DeleteInput{VMIM: vmim, VMI: vmi, Policy: policy})
	v.Metrics.decided(WebhookVMIMDelete, ds)
	return verdict(vmim, ds, true)
}

// verdict turns decisions into admission warnings and, when any rule denies, a refusal: 422
// Invalid with one cause per rule for a create, 403 Forbidden for a cancel.
func verdict(vmim *kubevirtv1.VirtualMachineInstanceMigration, ds []Decision, cancel bool) (admission.Warnings, error) {
	var warnings admission.Warnings
	var errs field.ErrorList
	for _, d := range ds {
		switch {
		case d.Deny:
			path := d.Field
			if path == "" {
				path = "spec.vmiName"
			}
			errs = append(errs, field.Forbidden(field.NewPath(path), settings.ShortenMessage(fmt.Sprintf("migranet %s: %s", d.Rule, d.Message))))
		case d.Warn:
			warnings = append(warnings, settings.ShortenMessage(fmt.Sprintf("migranet %s: %s", d.Rule, d.Message)))
		}
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	if cancel {
		return warnings, apierrors.NewForbidden(kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations").GroupResource(),
			settings.ShortenName(vmim.Name), errs.ToAggregate())
	}
	return warnings, apierrors.NewInvalid(vmimKind, settings.ShortenName(vmim.Name), errs)
}

// createInput gathers, from the cache only, what the create rules look at.
func (v *MigrationValidator) createInput(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration) (*CreateInput, error) {
	in := &CreateInput{VMIM: vmim, Network: v.Snapshots.Load(), Pods: v.Pods}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		in.User = req.UserInfo.Username
	}
	var err error
	if in.VMI, err = v.vmi(ctx, vmim); err != nil {
		return nil, err
	}
	if v.stores != nil {
		if in.OtherMigrations, err = v.stores.migrationsOf(vmim.Namespace, vmim.Spec.VMIName); err != nil {
			return nil, err
		}
	} else {
		others := &kubevirtv1.VirtualMachineInstanceMigrationList{}
		if err := v.Reader.List(ctx, others, client.InNamespace(vmim.Namespace), client.MatchingFields{vmiNameIndex: vmim.Spec.VMIName}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range others.Items {
			in.OtherMigrations = append(in.OtherMigrations, &others.Items[i])
		}
	}
	if v.kubeVirt != nil {
		kv, err := v.kubeVirt(ctx)
		if err != nil {
			return nil, err
		}
		in.KubeVirt = kv.kv
	} else if in.KubeVirt, err = settings.KubeVirtCR(ctx, v.Reader, v.KubeVirtNamespace, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if v.nodeState != nil {
		if st := v.nodeState(); st != nil {
			in.Nodes, in.index = st.nodes, st.index
		}
	} else {
		in.Nodes = v.Nodes()
	}
	in.Policy, in.CurrentHash = v.policyAndHash(ctx)
	return in, nil
}

func (v *MigrationValidator) vmi(ctx context.Context, vmim *kubevirtv1.VirtualMachineInstanceMigration) (*kubevirtv1.VirtualMachineInstance, error) {
	if v.stores != nil {
		return v.stores.vmi(vmim.Namespace, vmim.Spec.VMIName)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: vmim.Namespace, Name: vmim.Spec.VMIName}, vmi, client.UnsafeDisableDeepCopy)
	if err != nil && apierrors.IsNotFound(err) {
		return nil, nil
	}
	return vmi, err
}

// settingsMemo caches the parsed migration-policy and the migration network's hash per
// resourceVersion, so admission does not re-parse unchanged settings on every request.
type settingsMemo struct {
	mu                  sync.Mutex
	policyRV, networkRV string
	policy              *settings.MigrationPolicy
	hash                string
}

// load returns the migration policy (nil = default) and the current migration network hash.
func (m *settingsMemo) load(ctx context.Context, r client.Reader) (*settings.MigrationPolicy, string) {
	policy, network := &v1beta1.Setting{}, &v1beta1.Setting{}
	// Shallow reads of the cached objects: the setting's status lists every node, and a deep copy
	// per admission would cost more than the rules. Nothing here modifies them.
	policyErr := r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, policy, client.UnsafeDisableDeepCopy)
	networkErr := r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, network, client.UnsafeDisableDeepCopy)
	m.mu.Lock()
	defer m.mu.Unlock()
	if policyErr != nil {
		m.policy, m.policyRV = nil, ""
	} else if policy.ResourceVersion != m.policyRV {
		m.policy, _ = settings.ParseMigrationPolicy(settings.EffectiveValue(policy), field.NewPath("value"))
		m.policyRV = policy.ResourceVersion
	}
	if networkErr != nil {
		m.hash, m.networkRV = "", ""
	} else if network.ResourceVersion != m.networkRV {
		m.hash = settings.EffectiveNetwork(network).Hash
		m.networkRV = network.ResourceVersion
	}
	return m.policy, m.hash
}
