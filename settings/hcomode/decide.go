package hcomode

import (
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition in HCO mode.
const (
	// ReasonApplied: migranet's own value is in force (the settings controller's reason too).
	ReasonApplied = "Applied"
	// ReasonMirrored: the HyperConverged CR names a network migranet did not write there (or
	// that was written there after migranet's write), and migranet mirrors it.
	ReasonMirrored = "MirroredFromHyperConverged"
	// ReasonNotApplied: the HyperConverged CR names one network and the KubeVirt CR another: HCO
	// has not copied the field yet (or cannot: its own conditions say why).
	ReasonNotApplied = "HyperConvergedNotApplied"
	// ReasonNADUnreadable: the KubeVirt CR names a NAD that is missing or not a migration
	// network migranet can read; the network mirrored before is kept.
	ReasonNADUnreadable = "NetworkAttachmentDefinitionUnreadable"
	// ReasonHyperConvergedNotFound: no HyperConverged CR to write to or read from.
	ReasonHyperConvergedNotFound = "HyperConvergedNotFound"
	// ReasonKubeVirtNotFound: no KubeVirt CR, so no network is in force.
	ReasonKubeVirtNotFound = "KubeVirtNotFound"
)

// Input is what Decide looks at, read by the settings controller.
type Input struct {
	// Own is migranet's setting's own value, parsed and judged (an invalid value never reaches
	// Decide: the controller reports it and writes nothing).
	Own settings.Effective
	// WrittenHash is the setting's status.writtenHash.
	WrittenHash string
	// HyperConverged is the HyperConverged CR (Key); nil when absent.
	HyperConverged *unstructured.Unstructured
	Key            client.ObjectKey
	Field          Field
	// KubeVirt is the KubeVirt CR HCO writes; nil when absent.
	KubeVirt *kubevirtv1.KubeVirt
	// NADs are the NetworkAttachmentDefinitions of the HyperConverged CR's namespace.
	NADs []nadv1.NetworkAttachmentDefinition
}

// Decision is what the settings controller does.
type Decision struct {
	// Write: migranet's own value decides. The controller renders its NAD (when enabled), sets
	// the HyperConverged field to Own.NAD ("" removes it: the pod network) unless it says so
	// already, records WrittenHash and clears status.source. Configured is then the outcome once
	// every step succeeded.
	Write       bool
	WrittenHash string
	// Source is status.source while the HyperConverged CR decides; nil with Write, or to keep the
	// stored one (the NAD in force cannot be read now).
	Source *v1beta1.NetworkSource
	// Network is the mirrored network in force; nil for the pod network or with Write.
	Network    *settings.Network
	Configured metav1.Condition
	// Keep are the NADs the cleanup of migranet's own NADs must keep: the one the HyperConverged
	// CR names and the one the KubeVirt CR names (HCO may not have copied the field yet).
	Keep []string
	// Guard names the NADs other pods and VMs must stay off besides migranet's own.
	Guard []string
}

// OwnKey is what status.writtenHash records for an own value: its hash, DisabledHash when empty.
func OwnKey(own settings.Effective) string {
	if own.Network == nil {
		return v1beta1.DisabledHash
	}
	return own.Hash
}

// Decide judges who decides the network: migranet's value when it changed since migranet last
// wrote it (or it is what the HyperConverged CR names), the HyperConverged CR otherwise. It
// never fails: what it cannot read it says in Configured.
func Decide(in Input) Decision {
	hc, kv := in.Field.Get(in.HyperConverged), settings.MigrationNetworkOf(in.KubeVirt)
	d := Decision{Keep: settings.AppendUnique(nil, hc, kv)}
	d.Guard = d.Keep
	own := OwnKey(in.Own)
	if in.HyperConverged != nil {
		switch {
		case in.WrittenHash != own && (in.WrittenHash != "" || in.Own.Network != nil):
			// The value changed since migranet last wrote it (or was never written): it is newer
			// than any edit of the HyperConverged CR.
			d.Write, d.WrittenHash = true, own
		case in.WrittenHash != "" && hc == in.Own.NAD:
			// migranet's write stands.
			d.Write, d.WrittenHash = true, own
		}
		if d.Write {
			d.Configured = in.applied(hc, kv)
			return d
		}
	}
	return in.mirror(d, hc, kv)
}

// ref names the HyperConverged CR for messages.
func (in Input) ref() string {
	return fmt.Sprintf("HyperConverged %s/%s", in.Key.Namespace, in.Key.Name)
}

// SourceRef is status.source.setting in HCO mode: the object to edit, resource/namespace/name.
func SourceRef(key client.ObjectKey) string {
	return Resource + "." + Group + "/" + key.Namespace + "/" + key.Name
}

// applied is Configured while migranet's value is in force: True once HCO copied it into the
// KubeVirt CR.
func (in Input) applied(hc, kv string) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonApplied}
	want, what := in.Own.NAD, "NetworkAttachmentDefinition "+in.Key.Namespace+"/"+in.Own.NAD
	if want == "" {
		what = "no migration network (the pod network)"
	}
	c.Message = fmt.Sprintf("this setting's value is in force: migranet set %s %s to %s, and HCO copied it into the KubeVirt CR", in.ref(), in.Field, what)
	if kv != want {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNotApplied
		c.Message = fmt.Sprintf("this setting's value is in force: migranet sets %s %s to %s; the KubeVirt CR still names %q until HCO copies it (hcLiveMigrationToKv)", in.ref(), in.Field, what, kv)
		if hc == want {
			c.Message = fmt.Sprintf("this setting's value is in force: %s %s names %s; the KubeVirt CR still names %q until HCO copies it (hcLiveMigrationToKv)", in.ref(), in.Field, what, kv)
		}
	}
	return c
}

// mirror is the Decision while the HyperConverged CR decides: the NAD the KubeVirt CR names is
// mirrored into status.source.
func (in Input) mirror(d Decision, hc, kv string) Decision {
	d.Configured = metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonMirrored}
	handBack := fmt.Sprintf("; to let migranet decide, set this setting's value: migranet renders its NAD and writes %s", in.Field)
	if in.WrittenHash != "" && in.Own.NAD != "" {
		handBack = fmt.Sprintf("; %s was changed after migranet wrote %s there, and migranet follows the newer edit (to hand the network back, set the field to %s again or change this setting's value)", in.Field, in.Own.NAD, in.Own.NAD)
	}
	if in.HyperConverged == nil {
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHyperConvergedNotFound
		d.Configured.Message = fmt.Sprintf("%s does not exist: nothing to write this setting's value to", in.ref())
		if in.KubeVirt == nil {
			return d
		}
		handBack = ""
	}
	if in.KubeVirt == nil {
		d.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHyperConverged, Setting: SourceRef(in.Key)}
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonKubeVirtNotFound
		d.Configured.Message = fmt.Sprintf("no KubeVirt CR in namespace %s: no migration network is in force", in.Key.Namespace)
		return d
	}
	inForce := "the pod network (the KubeVirt CR names no migration network)"
	if kv != "" {
		nad, n, why := settings.ReadNetworkInForce(in.NADs, in.Key.Namespace, kv)
		if why != "" {
			d.Configured.Status, d.Configured.Reason, d.Configured.Message = metav1.ConditionFalse, ReasonNADUnreadable, why+"; the network mirrored before is kept"
			return d
		}
		d.Network = &n
		inForce = fmt.Sprintf("NetworkAttachmentDefinition %s/%s (%s)", in.Key.Namespace, kv, n.Summary())
		if nad.Labels[settings.LabelManagedBy] == settings.ManagedBy {
			inForce += ", which migranet rendered from an earlier value"
		}
	}
	d.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHyperConverged, Setting: SourceRef(in.Key)}
	if d.Network != nil {
		d.Source.NetworkAttachmentDefinition, d.Source.Value = in.Key.Namespace+"/"+kv, string(d.Network.Canonical())
	}
	switch {
	case in.HyperConverged == nil:
		d.Configured.Message += "; in force: " + inForce
	case hc != kv:
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonNotApplied
		d.Configured.Message = fmt.Sprintf("%s %s names %q; HCO has not copied it into the KubeVirt CR yet; in force: %s", in.ref(), in.Field, hc, inForce)
	default:
		d.Configured.Message = fmt.Sprintf("%s %s decides: KubeVirt migrates over %s", in.ref(), in.Field, inForce)
	}
	d.Configured.Message += handBack
	return d
}
