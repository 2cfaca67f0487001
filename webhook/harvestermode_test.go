package webhook

import (
	"context"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// TestHarvesterModeRefusesAValue: in Harvester mode a value or default for migranet's network
// setting is refused on its field, naming Harvester's setting; clearing them, status-only
// updates, and the other settings are admitted. Outside the mode the same value is admitted.
// Catches: two settings deciding one network (Harvester's controller and migranet's fighting
// over the KubeVirt CR), or an admin left editing a setting that does nothing.
func TestHarvesterModeRefusesAValue(t *testing.T) {
	ctx := context.Background()
	v, _ := settingValidator(placedKubeVirt())
	v.Harvester = true
	_, err := v.ValidateCreate(ctx, networkSetting(settingValue))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "kubectl edit settings.harvesterhci.io vm-migration-network") {
		t.Fatalf("create with a value in Harvester mode: %v, want 422 naming Harvester's setting", err)
	}
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "value" {
		t.Errorf("causes = %+v, want one on value", causes)
	}
	withDefault := networkSetting("")
	withDefault.Default = settingValue
	if _, err := v.ValidateUpdate(ctx, networkSetting(""), withDefault); err == nil || !strings.Contains(err.Error(), "default: Forbidden") {
		t.Errorf("a default in Harvester mode: %v, want refused on default", err)
	}
	for name, tc := range map[string]struct{ old, new *v1beta1.Setting }{
		"clearing the value":    {networkSetting(settingValue), networkSetting("")},
		"the owned empty one":   {nil, networkSetting("")},
		"the policy setting":    {nil, &v1beta1.Setting{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.MigrationPolicy}, Value: `{}`}},
		"a value stored before": {networkSetting(settingValue), labelled(networkSetting(settingValue))},
	} {
		var err error
		if tc.old == nil {
			_, err = v.ValidateCreate(ctx, tc.new)
		} else {
			_, err = v.ValidateUpdate(ctx, tc.old, tc.new)
		}
		if err != nil && strings.Contains(err.Error(), "Harvester mode") {
			t.Errorf("%s: refused in Harvester mode: %v", name, err)
		}
	}
	v.Harvester = false
	if _, err := v.ValidateCreate(ctx, networkSetting(settingValue)); err != nil {
		t.Errorf("outside Harvester mode the value was refused: %v", err)
	}
}

func labelled(s *v1beta1.Setting) *v1beta1.Setting {
	s.Labels = map[string]string{"team": "net"}
	return s
}

// TestNADDeleteReadsTheCRAgainBeforeRefusing: a replica whose cache still has the KubeVirt CR on
// the NAD being deleted reads the CR from the API server before refusing. Harvester's controller
// deletes its old NAD right after moving the CR and never retries a failed delete; a stale cache
// would leave its setting configured=False for good.
// Catches: a refusal on a cache that lags the controller that moved the CR.
func TestNADDeleteReadsTheCRAgainBeforeRefusing(t *testing.T) {
	const oldNAD, newNAD = "vm-migration-network-abcde", "vm-migration-network-fghij"
	on := func(network string) *kubevirtv1.KubeVirt {
		kv := readyKubeVirt()
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{Network: &network}
		return kv
	}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: oldNAD}}
	cache := &memReader{kv: on(oldNAD), settings: map[string]*v1beta1.Setting{}}
	v := &NADValidator{Reader: cache, APIReader: &memReader{kv: on(newNAD), settings: map[string]*v1beta1.Setting{}}, KubeVirtNamespace: "kubevirt"}
	if _, err := v.ValidateDelete(context.Background(), nad); err != nil {
		t.Errorf("the API server's CR has moved to %s, yet deleting %s was refused: %v", newNAD, oldNAD, err)
	}
	v.APIReader = &memReader{kv: on(oldNAD), settings: map[string]*v1beta1.Setting{}}
	if _, err := v.ValidateDelete(context.Background(), nad); !apierrors.IsForbidden(err) {
		t.Errorf("the CR still names %s on the API server: %v, want 403", oldNAD, err)
	}
}
