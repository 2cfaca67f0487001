package harvestermode

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Values of the manager's --harvester flag.
const (
	ModeAuto = "auto"
	ModeOn   = "on"
	ModeOff  = "off"
)

// Modes lists the flag's values, for its help and its error.
var Modes = []string{ModeAuto, ModeOn, ModeOff}

// SettingGVK is Harvester's Setting (harvesterhci.io/v1beta1, cluster-scoped; Harvester v1.8.2
// pkg/apis/harvesterhci.io/v1beta1/settings.go).
var SettingGVK = schema.GroupVersionKind{Group: "harvesterhci.io", Version: "v1beta1", Kind: "Setting"}

// SettingRef is how messages name the Harvester setting to edit.
const SettingRef = "settings.harvesterhci.io/" + v1beta1.MigrationNetwork

// NewSetting is an empty Harvester Setting object to read into.
func NewSetting() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SettingGVK)
	return u
}

// Detect decides the mode from the flag: on and off as given; auto is on when Harvester's Setting
// resource is served and its vm-migration-network setting exists. why says, for the start-up log,
// what decided. On is refused when the resource is not served: the mirror could not watch it.
func Detect(ctx context.Context, mode string, r client.Reader) (on bool, why string, err error) {
	switch mode {
	case ModeOff:
		return false, "--harvester=off", nil
	case ModeOn, ModeAuto:
	default:
		return false, "", fmt.Errorf("--harvester=%q: want one of %v", mode, Modes)
	}
	err = r.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, NewSetting())
	switch {
	case err == nil && mode == ModeOn:
		return true, "--harvester=on", nil
	case err == nil:
		return true, "--harvester=auto: " + SettingRef + " exists", nil
	case meta.IsNoMatchError(err):
		if mode == ModeOn {
			return false, "", fmt.Errorf("--harvester=on, but the API server does not serve settings.harvesterhci.io (Harvester's Setting CRD): install migranet in Harvester mode only on Harvester, or use --harvester=auto")
		}
		return false, "--harvester=auto: settings.harvesterhci.io is not served (not a Harvester cluster)", nil
	case apierrors.IsNotFound(err):
		if mode == ModeOn {
			return true, "--harvester=on (" + SettingRef + " does not exist yet: the pod network is in force until Harvester creates it)", nil
		}
		return false, "--harvester=auto: " + SettingRef + " does not exist", nil
	default:
		return false, "", fmt.Errorf("reading %s to choose the Harvester mode (--harvester=%s): %w", SettingRef, mode, err)
	}
}
