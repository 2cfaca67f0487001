package decider

import (
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Decider is one source of the migration network in force. Implementations are pure: the
// settings controller reads what they name and carries out what they decide.
type Decider interface {
	// Mode names the source.
	Mode() Mode
	// Owner is the object that decides besides migranet's setting, empty, to read into, and its
	// key; nil for Own (only migranet's setting and the KubeVirt CR decide).
	Owner() (client.Object, client.ObjectKey)
	// UsesValue reports whether migranet's own value can be put in force (Own, HCO): it is then
	// judged before anything is written. In Harvester mode the value is refused and ignored.
	UsesValue() bool
	// Decide judges who decides now and what migranet does. It never fails: what it cannot
	// read it says in Configured.
	Decide(in Observed) Decision
	// SummaryPrefix starts status.summary ("Harvester: ", "HCO: "; "" for Own).
	SummaryPrefix() string
}

// Observed is what Decide looks at, read by the settings controller from its cache.
type Observed struct {
	// Own is migranet's setting's own value, parsed and judged (an invalid value never reaches
	// Decide: the controller reports it and writes nothing); OwnValue is that value as stored,
	// trimmed ("" when empty).
	Own      settings.Effective
	OwnValue string
	// WrittenHash is the setting's status.writtenHash.
	WrittenHash string
	// Owner is the object Decider.Owner names; nil when absent or for Own.
	Owner *unstructured.Unstructured
	// KubeVirt is the KubeVirt CR in Namespace; nil when absent.
	KubeVirt *kubevirtv1.KubeVirt
	// NADs are the NetworkAttachmentDefinitions of Namespace, the KubeVirt namespace.
	NADs      []nadv1.NetworkAttachmentDefinition
	Namespace string
}

// Decision is what the settings controller does.
type Decision struct {
	// Own: migranet's value decides. Its NAD is rendered (when the value is not empty), Point
	// puts it in force, status.source is cleared and the applied hash and network are the
	// value's once every step succeeded.
	Own bool
	// NotApplied: with Own, the steps cannot put the value in force yet (no KubeVirt CR): the
	// applied hash and network keep the stored ones.
	NotApplied bool
	// RenderOwn: another source decides, and the value's NAD is kept rendered meanwhile (HCO's
	// hand-back: setting the field back to it finds it there).
	RenderOwn bool
	// Point is the one-field write that puts migranet's network in force; nil when there is
	// nothing to write (it is in force already, or the source never lets migranet write).
	Point *Point
	// WrittenHash is status.writtenHash to record; "" keeps the stored one.
	WrittenHash string
	// Source is status.source while another source decides; nil with Own, or to keep the
	// stored one (Keep the mirror: the NAD in force is missing from this cache).
	Source *v1beta1.NetworkSource
	// Network is the mirrored network migranet judges; nil for the pod network, a NAD not
	// judged, or with Own.
	Network *settings.Network
	// Configured is the condition once every step succeeded.
	Configured metav1.Condition
	// Keep are the NADs the cleanup of migranet's own NADs keeps besides the value's: those the
	// KubeVirt CR and the owner name.
	Keep []string
	// Guard names the NADs other pods and VMs must stay off besides migranet's own.
	Guard []string
}

// Point is a JSON merge patch (RFC 7386) of one field of one object.
type Point struct {
	// Object names the object to patch (kind, namespace, name).
	Object client.Object
	// Field names the field, for logs and messages.
	Field string
	// Network is what the field is set to ("" removes it).
	Network string
	// Patch is the merge patch.
	Patch []byte
}

// Reasons of the Configured condition that more than one source gives.
const (
	// ReasonKubeVirtNotFound: no KubeVirt CR, so no network is in force.
	ReasonKubeVirtNotFound = "KubeVirtNotFound"
	// ReasonNADUnreadable: the KubeVirt CR names a NAD this cache does not hold; the network
	// mirrored before is kept until it appears.
	ReasonNADUnreadable = "NetworkAttachmentDefinitionUnreadable"
)
