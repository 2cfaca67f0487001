package harvestermode

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// SettingGVK is Harvester's Setting (harvesterhci.io/v1beta1, cluster-scoped; Harvester v1.8.2
// pkg/apis/harvesterhci.io/v1beta1/settings.go).
var SettingGVK = schema.GroupVersionKind{Group: "harvesterhci.io", Version: "v1beta1", Kind: "Setting"}

// SettingRef is how messages name the Harvester setting to edit.
const SettingRef = "settings.harvesterhci.io/" + v1beta1.MigrationNetwork

// Harvester v1.8.2's annotations on its Setting and condition type (docs/harvester.md, "The
// controller"): the hash of the value it applied last, the NAD it put in force, and the condition
// its controller sets.
const (
	AnnotationAppliedHash = settings.LabelHarvesterMigrationHash
	AnnotationNAD         = "vm-migration-network.settings.harvesterhci.io/net-attach-def"
	ConditionConfigured   = "configured"
)

// NewSetting is an empty Harvester Setting object to read into.
func NewSetting() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SettingGVK)
	return u
}
