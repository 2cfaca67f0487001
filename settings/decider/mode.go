package decider

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Mode is who decides the migration network on this cluster, chosen once at start-up.
type Mode string

// The modes.
const (
	ModeOwn       Mode = "Own"
	ModeHarvester Mode = "Harvester"
	ModeHCO       Mode = "HCO"
)

// Values of the manager's --harvester and --hco flags.
const (
	FlagAuto = "auto"
	FlagOn   = "on"
	FlagOff  = "off"
)

// FlagValues lists the flags' values, for their help and their errors.
var FlagValues = []string{FlagAuto, FlagOn, FlagOff}

// Flags are the manager's --harvester and --hco.
type Flags struct {
	Harvester, HCO string
}

// Choice is what Detect chose: the Decider and, for the start-up log, why.
type Choice struct {
	Decider Decider
	Why     string
}

// Detect chooses, once, who decides the network: Harvester when --harvester is on, or auto and
// Harvester's setting exists; else HCO when --hco is on, or auto and the KubeVirt CR in
// kubevirtNamespace has a controller owner of kind HyperConverged; else migranet's own setting.
// A mode forced on without what it needs to work (Harvester's Setting resource, the HyperConverged
// resource) is refused, naming the flag.
func Detect(ctx context.Context, flags Flags, r client.Reader, mapper meta.RESTMapper, kubevirtNamespace string) (Choice, error) {
	for _, f := range []struct{ name, value string }{{"harvester", flags.Harvester}, {"hco", flags.HCO}} {
		switch f.value {
		case FlagAuto, FlagOn, FlagOff:
		default:
			return Choice{}, fmt.Errorf("--%s=%q: want one of %v", f.name, f.value, FlagValues)
		}
	}
	on, why, err := detectHarvester(ctx, flags.Harvester, r)
	switch {
	case err != nil:
		return Choice{}, err
	case on:
		return Choice{Decider: Harvester{Namespace: kubevirtNamespace}, Why: why + "; HCO mode not looked for"}, nil
	}
	hco, hcoWhy, err := detectHCO(ctx, flags.HCO, r, mapper, kubevirtNamespace)
	why += "; " + hcoWhy
	switch {
	case err != nil:
		return Choice{}, err
	case hco != nil:
		return Choice{Decider: *hco, Why: why}, nil
	}
	return Choice{Decider: Own{Namespace: kubevirtNamespace}, Why: why + "; migranet's own setting decides"}, nil
}

// detectHarvester: on when forced, or auto and Harvester's vm-migration-network setting exists.
func detectHarvester(ctx context.Context, flag string, r client.Reader) (bool, string, error) {
	if flag == FlagOff {
		return false, "--harvester=off", nil
	}
	err := r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, harvestermode.NewSetting())
	switch {
	case err == nil && flag == FlagOn:
		return true, "--harvester=on", nil
	case err == nil:
		return true, "--harvester=auto: " + harvestermode.SettingRef + " exists", nil
	case meta.IsNoMatchError(err):
		if flag == FlagOn {
			return false, "", fmt.Errorf("--harvester=on, but the API server does not serve settings.harvesterhci.io (Harvester's Setting CRD): install migranet in Harvester mode only on Harvester, or use --harvester=auto")
		}
		return false, "--harvester=auto: settings.harvesterhci.io is not served (not a Harvester cluster)", nil
	case apierrors.IsNotFound(err):
		if flag == FlagOn {
			return true, "--harvester=on (" + harvestermode.SettingRef + " does not exist yet: the pod network is in force until Harvester creates it)", nil
		}
		return false, "--harvester=auto: " + harvestermode.SettingRef + " does not exist", nil
	default:
		return false, "", fmt.Errorf("reading %s to choose the Harvester mode (--harvester=%s): %w", harvestermode.SettingRef, flag, err)
	}
}

// detectHCO: on when forced, or auto and the KubeVirt CR's controller owner is a HyperConverged;
// the field written is the API version the cluster serves (hcomode.FieldFor).
func detectHCO(ctx context.Context, flag string, r client.Reader, mapper meta.RESTMapper, kubevirtNamespace string) (*HCO, string, error) {
	if flag == FlagOff {
		return nil, "--hco=off", nil
	}
	kv, err := clusterread.KubeVirtCR(ctx, r, kubevirtNamespace)
	if err != nil {
		return nil, "", fmt.Errorf("reading the KubeVirt CR to choose the HCO mode (--hco=%s): %w", flag, err)
	}
	var owner *metav1.OwnerReference
	if kv != nil {
		owner = hcomode.HyperConvergedOwner(kv)
	}
	if flag == FlagAuto && owner == nil {
		why := "--hco=auto: no KubeVirt CR in " + kubevirtNamespace
		if kv != nil {
			why = fmt.Sprintf("--hco=auto: KubeVirt %s/%s has no controller owner of kind %s (not managed by HCO)", kv.Namespace, kv.Name, hcomode.Kind)
		}
		return nil, why, nil
	}
	field, err := hcomode.FieldFor(mapper)
	if err != nil {
		return nil, "", fmt.Errorf("--hco=%s: %w", flag, err)
	}
	h := &HCO{Key: client.ObjectKey{Namespace: kubevirtNamespace, Name: hcomode.Name}, Field: field}
	if owner == nil {
		return h, fmt.Sprintf("--hco=on (no KubeVirt CR owned by a %s in %s yet); writing %s", hcomode.Kind, kubevirtNamespace, field), nil
	}
	h.Key.Name = owner.Name
	return h, fmt.Sprintf("--hco=%s: KubeVirt %s/%s is owned by %s %s/%s; writing %s", flag, kv.Namespace, kv.Name, hcomode.Kind, kv.Namespace, owner.Name, field), nil
}
