package webhook

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// +kubebuilder:webhook:path=/validate-migranet-io-v1beta1-setting,mutating=false,failurePolicy=fail,sideEffects=None,groups=migranet.io,resources=settings,verbs=create;update;delete,versions=v1beta1,name=settings.migranet.io,admissionReviewVersions=v1,timeoutSeconds=10

// SettingValidator admits Setting create, update and delete.
type SettingValidator struct {
	// Reader is the manager's cache: the migrations in flight and the ServiceCIDRs are listed from
	// it.
	Reader client.Reader
	// APIReader reads Service default/kubernetes (nil: not read).
	APIReader client.Reader
	// KubeVirtNamespace holds the virt-handler pods whose addresses a range may not overlap.
	KubeVirtNamespace string
	// State gives the nodes and the KubeVirt CR in force, as the migration rules read them.
	State migrationcheck.State
	// Metrics counts the decisions; nil counts nothing.
	Metrics *Metrics
	// Harvester is Harvester mode (package harvestermode): Harvester's own setting decides the
	// migration network, and a value for migranet's is refused, naming the setting to edit.
	Harvester bool
}

var settingKind = v1beta1.GroupVersion.WithKind("Setting").GroupKind()

// ValidateCreate validates a new Setting.
func (v *SettingValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	s, ok := obj.(*v1beta1.Setting)
	if !ok {
		v.Metrics.count(WebhookSetting, RuleNone, ResultError)
		return nil, fmt.Errorf("expected a Setting, got %T", obj)
	}
	return v.validate(ctx, nil, s)
}

// ValidateUpdate validates a changed Setting. A change that leaves value and default alone is
// admitted as is, so that node changes since the value was stored never block unrelated edits.
func (v *SettingValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	old, ok1 := oldObj.(*v1beta1.Setting)
	s, ok2 := newObj.(*v1beta1.Setting)
	if !ok1 || !ok2 {
		v.Metrics.count(WebhookSetting, RuleNone, ResultError)
		return nil, fmt.Errorf("expected Settings, got %T and %T", oldObj, newObj)
	}
	if old.Value == s.Value && old.Default == s.Default {
		v.Metrics.count(WebhookSetting, RuleNone, ResultAllowed)
		return nil, nil
	}
	return v.validate(ctx, old, s)
}

// ValidateDelete refuses deleting a setting migranet owns: resetting its value is the way back.
func (v *SettingValidator) ValidateDelete(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	s, ok := obj.(*v1beta1.Setting)
	if !ok {
		v.Metrics.count(WebhookSetting, RuleNone, ResultError)
		return nil, fmt.Errorf("expected a Setting, got %T", obj)
	}
	if s.Name != v1beta1.MigrationNetwork && s.Name != v1beta1.MigrationPolicy {
		v.Metrics.count(WebhookSetting, RuleNone, ResultAllowed)
		return nil, nil
	}
	v.Metrics.count(WebhookSetting, RuleOwnedSetting, ResultDenied)
	return nil, apierrors.NewForbidden(v1beta1.GroupVersion.WithResource("settings").GroupResource(), settings.ShortenName(s.Name),
		fmt.Errorf("migranet owns this setting and recreates it; to go back to the default, clear its value instead: "+
			`kubectl patch settings.migranet.io %s --type merge -p '{"value":""}'`, s.Name))
}

func (v *SettingValidator) validate(ctx context.Context, old, s *v1beta1.Setting) (admission.Warnings, error) {
	if err := v.harvesterOwned(old, s); err != nil {
		v.Metrics.count(WebhookSetting, RuleHarvesterMode, ResultDenied)
		return nil, err
	}
	cl, note, err := v.cluster(ctx, s)
	if err != nil {
		v.Metrics.count(WebhookSetting, RuleNone, ResultError)
		return nil, apierrors.NewInternalError(err)
	}
	eff, errs, warnings := settings.JudgeSetting(s, cl)
	if note != "" {
		warnings = append(warnings, note)
	}
	rule := RuleSettingValue
	if s.Name == v1beta1.MigrationNetwork && len(errs) == 0 && settings.ValueNetwork(old).Hash != eff.Hash {
		busy, err := v.migrationsInFlight(ctx)
		if err != nil {
			v.Metrics.count(WebhookSetting, RuleNone, ResultError)
			return nil, apierrors.NewInternalError(err)
		}
		if len(busy) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("value"), inFlightMessage(busy)))
			rule = RuleMigrationsInFlight
		}
	}
	if len(errs) > 0 {
		v.Metrics.count(WebhookSetting, rule, ResultDenied)
		return warnings, apierrors.NewInvalid(settingKind, settings.ShortenName(s.Name), errs)
	}
	v.Metrics.simple(WebhookSetting, RuleSettingValue, warnings, nil)
	return warnings, nil
}

// cluster gathers, from the cache, what the cluster-dependent rules look at. The settings
// controller derives the same Cluster (settings.ClusterOf) to judge a value stored behind the
// webhook's back. The cluster's own networks (clusterread.OwnNetworks) are read only for a
// migration network value; what cannot be read, the range is not checked against, and note says
// so (a warning).
func (v *SettingValidator) cluster(ctx context.Context, s *v1beta1.Setting) (cl *settings.Cluster, note string, err error) {
	nodes, err := v.State.Nodes(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("reading the cache: %w", err)
	}
	kv, err := v.State.KubeVirt(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("reading the cache: %w", err)
	}
	var services []netip.Prefix
	var pods []settings.PodAddr
	if s != nil && s.Name == v1beta1.MigrationNetwork && settings.EffectiveValue(s) != "" && v.Reader != nil {
		var missed string
		if services, pods, missed = clusterread.OwnNetworks(ctx, v.Reader, v.APIReader, v.KubeVirtNamespace); missed != "" {
			note = "value.range: not checked against " + missed
		}
	}
	return settings.ClusterOf(nodes.Nodes, kv, services, pods), note, nil
}

// migrationsInFlight names the migrations that have not reached Succeeded or Failed.
func (v *SettingValidator) migrationsInFlight(ctx context.Context) ([]string, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := v.Reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing migrations from the cache: %w", err)
	}
	var busy []string
	for _, m := range list.Items {
		if m.Status.Phase != kubevirtv1.MigrationSucceeded && m.Status.Phase != kubevirtv1.MigrationFailed {
			busy = append(busy, m.Namespace+"/"+m.Name)
		}
	}
	sort.Strings(busy)
	return busy, nil
}

func inFlightMessage(busy []string) string {
	shown := busy
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(busy) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(busy)-len(shown))
	}
	return fmt.Sprintf("the migration network cannot change while %d migration(s) are in progress (%s%s): "+
		"changing it restarts every virt-handler and would break them; wait until they succeed or fail, "+
		"or cancel them with kubectl delete vmim", len(busy), strings.Join(shown, ", "), more)
}

// harvesterOwned refuses, in Harvester mode, giving migranet's vm-migration-network setting a
// value or default: Harvester's setting decides the network there, and this one mirrors it.
// Clearing them is admitted.
func (v *SettingValidator) harvesterOwned(old, s *v1beta1.Setting) error {
	if !v.Harvester || s.Name != v1beta1.MigrationNetwork {
		return nil
	}
	if old == nil {
		old = &v1beta1.Setting{}
	}
	var errs field.ErrorList
	for _, f := range []struct {
		name     string
		new, was string
	}{{"value", s.Value, old.Value}, {"default", s.Default, old.Default}} {
		if strings.TrimSpace(f.new) == "" || f.new == f.was {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath(f.name), fmt.Sprintf("migranet runs in Harvester mode: Harvester's setting "+
			"%s decides the migration network, and this setting's status mirrors it; edit that one instead "+
			"(kubectl edit settings.harvesterhci.io %s), and leave this %s empty", harvestermode.SettingRef, v1beta1.MigrationNetwork, f.name)))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(settingKind, settings.ShortenName(s.Name), errs)
}
