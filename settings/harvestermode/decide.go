package harvestermode

import (
	"crypto/sha1" //nolint:gosec // Harvester's own hash of the value, compared, not trusted
	"encoding/hex"
	"fmt"
	"sort"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition in Harvester mode.
const (
	// ReasonMirrored: Harvester's value is the network in force, and migranet mirrors it.
	ReasonMirrored = "MirroredFromHarvester"
	// ReasonHarvesterPending: Harvester has not put its value in force (yet, or it failed: its
	// own condition says which); the status mirrors what is in force meanwhile.
	ReasonHarvesterPending = "HarvesterNotApplied"
	// ReasonNADUnreadable: the KubeVirt CR names a NAD that is missing or that migranet cannot
	// read as a migration network; the network mirrored before is kept.
	ReasonNADUnreadable = "NetworkAttachmentDefinitionUnreadable"
	// ReasonKubeVirtNotFound: no KubeVirt CR, so no network is in force.
	ReasonKubeVirtNotFound = "KubeVirtNotFound"
)

// Harvester v1.8.2's annotations on its Setting and condition type (docs/harvester.md, "The
// controller"): the hash of the value it applied last, and the NAD it put in force.
const (
	AnnotationAppliedHash = settings.LabelHarvesterMigrationHash
	AnnotationNAD         = "vm-migration-network.settings.harvesterhci.io/net-attach-def"
	harvesterConfigured   = "configured"
)

// Input is what Decide looks at, read by the Mirror.
type Input struct {
	// Harvester is Harvester's vm-migration-network Setting; nil when absent.
	Harvester *unstructured.Unstructured
	// KubeVirt is the KubeVirt CR in force; nil when there is none.
	KubeVirt *kubevirtv1.KubeVirt
	// NADs are the NetworkAttachmentDefinitions in KubeVirt's namespace, Namespace.
	NADs      []nadv1.NetworkAttachmentDefinition
	Namespace string
	// OwnValue is migranet's own setting's effective value: ignored in Harvester mode, said so.
	OwnValue string
}

// Decision is what the Mirror writes.
type Decision struct {
	// Source is status.source; nil keeps the stored one (the NAD in force cannot be read now).
	Source *v1beta1.NetworkSource
	// Network is the network in force; nil for the pod network (or when Source is nil).
	Network *settings.Network
	// Configured is the condition.
	Configured metav1.Condition
	// Guard names the NADs other pods and VMs must stay off: every migration NAD Harvester
	// rendered in the namespace (its old ones linger until its controller deletes them) and the
	// one in force.
	Guard []string
}

// Decide mirrors the network in force, the NAD the KubeVirt CR names, and judges how far
// Harvester's value is applied. It never fails: what it cannot read it says in Configured.
func Decide(in Input) Decision {
	d := Decision{Configured: metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonMirrored}}
	value, applied, failure := harvesterState(in.Harvester)
	d.Guard = harvesterNADs(in.NADs)
	if in.KubeVirt == nil {
		d.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHarvester, Setting: SettingRef}
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonKubeVirtNotFound
		d.Configured.Message = fmt.Sprintf("no KubeVirt CR in namespace %s: no migration network is in force", in.Namespace)
		return d
	}
	name := settings.MigrationNetworkOf(in.KubeVirt)
	inForce := "the pod network (the KubeVirt CR names no migration network)"
	if name != "" {
		nad, n, why := settings.ReadNetworkInForce(in.NADs, in.Namespace, name)
		if why != "" {
			d.Configured.Status, d.Configured.Reason, d.Configured.Message = metav1.ConditionFalse, ReasonNADUnreadable, why+"; the network mirrored before is kept"
			d.Guard = settings.AppendUnique(d.Guard, name)
			return d
		}
		d.Network = &n
		d.Guard = settings.AppendUnique(d.Guard, name)
		inForce = fmt.Sprintf("NetworkAttachmentDefinition %s/%s (%s)", in.Namespace, name, n.Summary())
		if !settings.HarvesterMigrationNAD(nad) {
			inForce += ", which Harvester did not render"
		}
	}
	d.Source = sourceOf(in.Namespace, name, d.Network)
	switch want := hashOf(value); {
	case in.Harvester == nil:
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterPending
		d.Configured.Message = fmt.Sprintf("%s does not exist; in force: %s", SettingRef, inForce)
	case failure != "":
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterPending
		d.Configured.Message = fmt.Sprintf("Harvester failed to apply %s (its condition configured: %s); in force: %s", SettingRef, failure, inForce)
	case value == "" && name == "":
		// Nothing to apply; Harvester's controller skips an empty value on its first start and
		// records no hash then.
		d.Configured.Message = fmt.Sprintf("%s is empty: migrations use the pod network", SettingRef)
	case applied != want || !matches(in.NADs, in.Namespace, name, value, want):
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHarvesterPending
		d.Configured.Message = fmt.Sprintf("Harvester has not applied the value of %s yet; in force: %s", SettingRef, inForce)
	default:
		d.Configured.Message = fmt.Sprintf("%s is in force: KubeVirt migrates over %s", SettingRef, inForce)
	}
	if in.OwnValue != "" {
		d.Configured.Message += "; this setting's own value is not applied in Harvester mode (edit " + SettingRef + " instead)"
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
	applied = u.GetAnnotations()[AnnotationAppliedHash]
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != harvesterConfigured || m["status"] != string(metav1.ConditionFalse) {
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

// sourceOf is status.source for the NAD name in force carrying n (nil: the pod network).
func sourceOf(namespace, name string, n *settings.Network) *v1beta1.NetworkSource {
	src := &v1beta1.NetworkSource{Kind: v1beta1.SourceHarvester, Setting: SettingRef}
	if n != nil {
		src.NetworkAttachmentDefinition, src.Value = namespace+"/"+name, string(n.Canonical())
	}
	return src
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
