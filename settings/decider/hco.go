package decider

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/hcomode"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition in HCO mode (besides the shared ones).
const (
	// ReasonMirroredFromHyperConverged: the HyperConverged CR names a network migranet did not
	// write there (or that was written there after migranet's write), and migranet mirrors it.
	ReasonMirroredFromHyperConverged = "MirroredFromHyperConverged"
	// ReasonHyperConvergedNotApplied: the HyperConverged CR names one network and the KubeVirt CR
	// another: HCO has not copied the field yet (or cannot: its own conditions say why).
	ReasonHyperConvergedNotApplied = "HyperConvergedNotApplied"
	// ReasonHyperConvergedNotFound: no HyperConverged CR to write to or read from.
	ReasonHyperConvergedNotFound = "HyperConvergedNotFound"
)

// HCO is HCO mode (OpenShift Virtualization, OKD): the KubeVirt CR is HCO's operand, so migranet
// writes only the HyperConverged CR's network field, and whoever wrote last wins: migranet's value
// when it changed since migranet last wrote it (status.writtenHash), an edit of the HyperConverged
// CR made after that write otherwise.
type HCO struct {
	// Key is the HyperConverged CR; its namespace is the KubeVirt namespace.
	Key client.ObjectKey
	// Field is the network field of the served API version.
	Field hcomode.Field
}

// Mode is ModeHCO.
func (HCO) Mode() Mode { return ModeHCO }

// Owner is the HyperConverged CR.
func (h HCO) Owner() (client.Object, client.ObjectKey) { return h.Field.New(), h.Key }

// UsesValue: migranet's value is put in force through the HyperConverged CR.
func (HCO) UsesValue() bool { return true }

// SummaryPrefix marks a mirrored network.
func (HCO) SummaryPrefix() string { return "HCO: " }

// OwnKey is what status.writtenHash records for an own value: its hash, DisabledHash when empty.
func OwnKey(own settings.Effective) string {
	if own.Network == nil {
		return v1beta1.DisabledHash
	}
	return own.Hash
}

// SourceRef is status.source.setting in HCO mode: the object to edit, resource/namespace/name.
func (h HCO) SourceRef() string {
	return hcomode.Resource + "." + hcomode.Group + "/" + h.Key.Namespace + "/" + h.Key.Name
}

// Decide judges who decides: migranet's value when it changed since migranet last wrote it (or it
// is what the HyperConverged CR names), the HyperConverged CR otherwise.
func (h HCO) Decide(in Observed) Decision {
	hc, kv := h.Field.Get(in.Owner), settings.MigrationNetworkOf(in.KubeVirt)
	d := Decision{Keep: settings.AppendUnique(nil, hc, kv)}
	d.Guard = d.Keep
	own := OwnKey(in.Own)
	if in.Owner != nil {
		switch {
		case in.WrittenHash != own && (in.WrittenHash != "" || in.Own.Network != nil):
			// The value changed since migranet last wrote it (or was never written): it is newer
			// than any edit of the HyperConverged CR.
			d.Own, d.WrittenHash = true, own
		case in.WrittenHash != "" && hc == in.Own.NAD:
			// migranet's write stands.
			d.Own, d.WrittenHash = true, own
		}
		if d.Own {
			if hc != in.Own.NAD {
				d.Point = &Point{Object: in.Owner, Field: h.Field.String(), Network: in.Own.NAD, Patch: h.Field.Patch(in.Own.NAD)}
			}
			d.Configured = h.applied(in, hc, kv)
			return d
		}
	}
	return h.mirror(in, d, hc, kv)
}

// ref names the HyperConverged CR for messages.
func (h HCO) ref() string {
	return fmt.Sprintf("HyperConverged %s/%s", h.Key.Namespace, h.Key.Name)
}

// applied is Configured while migranet's value is in force: True once HCO copied it into the
// KubeVirt CR.
func (h HCO) applied(in Observed, hc, kv string) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonApplied}
	want, what := in.Own.NAD, "NetworkAttachmentDefinition "+h.Key.Namespace+"/"+in.Own.NAD
	if want == "" {
		what = "no migration network (the pod network)"
	}
	c.Message = fmt.Sprintf("this setting's value is in force: migranet set %s %s to %s, and HCO copied it into the KubeVirt CR", h.ref(), h.Field, what)
	if kv != want {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonHyperConvergedNotApplied
		c.Message = fmt.Sprintf("this setting's value is in force: migranet sets %s %s to %s; the KubeVirt CR still names %q until HCO copies it (hcLiveMigrationToKv)", h.ref(), h.Field, what, kv)
		if hc == want {
			c.Message = fmt.Sprintf("this setting's value is in force: %s %s names %s; the KubeVirt CR still names %q until HCO copies it (hcLiveMigrationToKv)", h.ref(), h.Field, what, kv)
		}
	}
	return c
}

// mirror is the Decision while the HyperConverged CR decides: the NAD the KubeVirt CR names is
// mirrored into status.source.
func (h HCO) mirror(in Observed, d Decision, hc, kv string) Decision {
	if in.Own.Network != nil {
		// The hand-back: setting the HyperConverged CR's field to migranet's NAD again, as the
		// message below says, must find the NAD there (hcoNetwork refuses a missing one), so it
		// stays rendered, and guarded, while the value is set.
		d.RenderOwn = true
		d.Keep = settings.AppendUnique(d.Keep, in.Own.NAD)
		d.Guard = d.Keep
	}
	d.Configured = metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonMirroredFromHyperConverged}
	handBack := fmt.Sprintf("; to let migranet decide, set this setting's value: migranet renders its NAD and writes %s", h.Field)
	if in.WrittenHash != "" && in.Own.NAD != "" {
		handBack = fmt.Sprintf("; %s was changed after migranet wrote %s there, and migranet follows the newer edit (to hand the network back, set the field to %s again or change this setting's value)", h.Field, in.Own.NAD, in.Own.NAD)
	}
	if in.Owner == nil {
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHyperConvergedNotFound
		d.Configured.Message = fmt.Sprintf("%s does not exist: nothing to write this setting's value to", h.ref())
		if in.KubeVirt == nil {
			return d
		}
		handBack = ""
	}
	if in.KubeVirt == nil {
		d.Source = &v1beta1.NetworkSource{Kind: v1beta1.SourceHyperConverged, Setting: h.SourceRef()}
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonKubeVirtNotFound
		d.Configured.Message = fmt.Sprintf("no KubeVirt CR in namespace %s: no migration network is in force", h.Key.Namespace)
		return d
	}
	f := readInForce(in.NADs, h.Key.Namespace, kv)
	if f.Missing != "" {
		d.Configured.Status, d.Configured.Reason, d.Configured.Message = metav1.ConditionFalse, ReasonNADUnreadable, f.Missing+"; the network mirrored before is kept"
		return d
	}
	d.Source, d.Network = f.source(v1beta1.SourceHyperConverged, h.SourceRef()), f.Network
	inForce := f.text
	if f.NAD != nil && f.NAD.Labels[settings.LabelManagedBy] == settings.ManagedBy {
		inForce += ", which migranet rendered from an earlier value"
	}
	switch {
	case in.Owner == nil:
		d.Configured.Message += "; in force: " + inForce
	case hc != kv:
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonHyperConvergedNotApplied
		d.Configured.Message = fmt.Sprintf("%s %s names %q; HCO has not copied it into the KubeVirt CR yet; in force: %s", h.ref(), h.Field, hc, inForce)
	default:
		d.Configured.Message = fmt.Sprintf("%s %s decides: KubeVirt migrates over %s", h.ref(), h.Field, inForce)
	}
	d.Configured.Message += handBack
	return d
}
