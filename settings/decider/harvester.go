package decider

import (
	"crypto/sha1" //nolint:gosec // Harvester's own hash of the value, compared, not trusted
	"encoding/hex"
	"fmt"
	"sort"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition in Harvester mode (besides the shared ones).
const (
	// ReasonMirroredFromHarvester: Harvester's value is the network in force, and migranet
	// mirrors it.
	ReasonMirroredFromHarvester = "MirroredFromHarvester"
	// ReasonHarvesterNotApplied: Harvester has not put its value in force (yet, or it failed: its
	// own condition says which); the status mirrors what is in force meanwhile.
	ReasonHarvesterNotApplied = "HarvesterNotApplied"
)

// Harvester is Harvester mode: Harvester's setting and controller render the NAD and write the
// KubeVirt CR, so migranet writes neither and mirrors the network in force.
type Harvester struct {
	// Namespace is KubeVirt's (harvester-system on Harvester).
	Namespace string
}

// Mode is ModeHarvester.
func (Harvester) Mode() Mode { return ModeHarvester }

// Owner is Harvester's vm-migration-network setting.
func (Harvester) Owner() (client.Object, client.ObjectKey) {
	return harvestermode.NewSetting(), client.ObjectKey{Name: v1beta1.MigrationNetwork}
}

// UsesValue: migranet's value is refused in Harvester mode and ignored.
func (Harvester) UsesValue() bool { return false }

// SummaryPrefix marks a mirrored network.
func (Harvester) SummaryPrefix() string { return "Harvester: " }

// Decide mirrors the network in force, the NAD the KubeVirt CR names, and judges how far
// Harvester's value is applied.
func (h Harvester) Decide(in Observed) Decision {
	d := Decision{Configured: metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonMirroredFromHarvester}}
	value, applied, failure := harvesterState(in.Owner)
	d.Guard = harvesterNADs(in.NADs)
	if in.KubeVirt == nil {
		d.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHarvester, Setting: harvestermode.SettingRef}
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonKubeVirtNotFound
		d.Configured.Message = fmt.Sprintf("no KubeVirt CR in namespace %s: no migration network is in force", h.Namespace)
		return d
	}
	name := settings.MigrationNetworkOf(in.KubeVirt)
	d.Keep = settings.AppendUnique(nil, name)
	d.Guard = settings.AppendUnique(d.Guard, name)
	f := readInForce(in.NADs, h.Namespace, name)
	if f.Missing != "" {
		d.Configured.Status, d.Configured.Reason, d.Configured.Message = metav1.ConditionFalse, ReasonNADUnreadable, f.Missing+"; the network mirrored before is kept"
		return d
	}
	d.Source, d.Network = f.source(v1beta1.SourceHarvester, harvestermode.SettingRef), f.Network
	inForce := f.text
	if f.NAD != nil && !settings.HarvesterMigrationNAD(f.NAD) {
		inForce += ", which Harvester did not render"
	}
	switch want := hashOf(value); {
	case in.Owner == nil:
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterNotApplied
		d.Configured.Message = fmt.Sprintf("%s does not exist; in force: %s", harvestermode.SettingRef, inForce)
	case failure != "":
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterNotApplied
		d.Configured.Message = fmt.Sprintf("Harvester failed to apply %s (its condition configured: %s); in force: %s", harvestermode.SettingRef, failure, inForce)
		if applied == want {
			// Harvester records the hash of the value it tried whether it succeeded or not, and
			// skips a value whose hash it recorded: a failure (a conflict on the KubeVirt CR, seen
			// in CI) stays until the value changes or the hash goes.
			d.Configured.Message += fmt.Sprintf("; Harvester does not try a value again once it recorded its hash: remove the annotation "+
				"(kubectl annotate %s %s-) and it applies the value again", harvestermode.SettingRef, harvestermode.AnnotationAppliedHash)
		}
	case value == "" && name == "":
		// Nothing to apply; Harvester's controller skips an empty value on its first start and
		// records no hash then.
		d.Configured.Message = fmt.Sprintf("%s is empty: migrations use the pod network", harvestermode.SettingRef)
	case applied != want || !matches(in.NADs, h.Namespace, name, value, want):
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterNotApplied
		d.Configured.Message = fmt.Sprintf("Harvester has not applied the value of %s yet; in force: %s", harvestermode.SettingRef, inForce)
	default:
		d.Configured.Message = fmt.Sprintf("%s is in force: KubeVirt migrates over %s", harvestermode.SettingRef, inForce)
	}
	if in.OwnValue != "" {
		d.Configured.Message += "; this setting's own value is not applied in Harvester mode (edit " + harvestermode.SettingRef + " instead)"
	}
	return d
}

// harvesterState reads Harvester's setting: its value, the hash of the value its controller
// applied last, and its configured condition's failure ("" unless False).
func harvesterState(u *unstructured.Unstructured) (value, applied, failure string) {
	if u == nil {
		return "", hashOf(""), ""
	}
	value, _, _ = unstructured.NestedString(u.Object, "value")
	applied = u.GetAnnotations()[harvestermode.AnnotationAppliedHash]
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != harvestermode.ConditionConfigured || m["status"] != string(metav1.ConditionFalse) {
			continue
		}
		failure = fmt.Sprintf("False, %v: %v", m["reason"], m["message"])
	}
	return value, applied, failure
}

// matches reports whether the NAD in force is the one Harvester rendered from value: its hash
// label says so, or, for the empty value, no NAD is in force.
func matches(nads []nadv1.NetworkAttachmentDefinition, namespace, name, value, hash string) bool {
	if value == "" {
		return name == ""
	}
	nad := settings.FindNAD(nads, namespace, name)
	return nad != nil && nad.Labels[settings.LabelHarvesterMigrationHash] == hash
}

// harvesterNADs names the NADs Harvester's controller rendered, sorted.
func harvesterNADs(nads []nadv1.NetworkAttachmentDefinition) []string {
	var names []string
	for i := range nads {
		if settings.HarvesterMigrationNAD(&nads[i]) && nads[i].DeletionTimestamp == nil {
			names = append(names, nads[i].Name)
		}
	}
	sort.Strings(names)
	return names
}

// hashOf is Harvester's hash of a value: SHA-1 of the string as stored, in hex
// (pkg/controller/master/kubevirt/vm_migration_network.go checkIsSameHashValue @v1.8.2).
func hashOf(value string) string {
	sum := sha1.Sum([]byte(value)) //nolint:gosec // Harvester's choice, compared only
	return hex.EncodeToString(sum[:])
}
