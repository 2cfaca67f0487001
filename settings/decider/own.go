package decider

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// Reasons of the Configured condition when migranet's value is in force.
const (
	// ReasonApplied: the value is in force (in HCO mode: and HCO copied it).
	ReasonApplied = "Applied"
	// ReasonDisabled: the empty value is in force: migrations use the pod network.
	ReasonDisabled = "Disabled"
)

// Own is a plain KubeVirt install: migranet's setting decides, migranet renders its NAD and
// writes the KubeVirt CR's spec.configuration.migrations.network, with a merge patch of that one
// field and no resourceVersion precondition (atomic on the server; virt-operator rewrites the CR's
// status throughout a rollout, so a guarded patch would mostly meet conflicts).
type Own struct {
	// Namespace is KubeVirt's.
	Namespace string
}

// Mode is ModeOwn.
func (Own) Mode() Mode { return ModeOwn }

// Owner: nothing but migranet's setting and the KubeVirt CR decides.
func (Own) Owner() (client.Object, client.ObjectKey) { return nil, client.ObjectKey{} }

// UsesValue: the value is what is put in force.
func (Own) UsesValue() bool { return true }

// SummaryPrefix is empty: the value is migranet's own.
func (Own) SummaryPrefix() string { return "" }

// Decide puts the value in force: its NAD rendered, the KubeVirt CR pointed at it unless it says
// so already. Without a KubeVirt CR the NAD is still rendered and Configured says the value is
// applied as soon as one appears.
func (o Own) Decide(in Observed) Decision {
	d := Decision{Own: true, Configured: metav1.Condition{Type: v1beta1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: ReasonApplied,
		Message: "KubeVirt migrations.network points at " + in.Own.NAD}}
	if in.Own.Network == nil {
		d.Configured.Reason, d.Configured.Message = ReasonDisabled, "migration network disabled: migrations use the pod network"
	}
	if in.KubeVirt == nil {
		d.Configured.Status, d.Configured.Reason = metav1.ConditionFalse, ReasonKubeVirtNotFound
		d.Configured.Message = "no KubeVirt CR in namespace " + o.Namespace + "; the setting is applied as soon as one appears"
		d.NotApplied = true
		return d
	}
	if settings.MigrationNetworkOf(in.KubeVirt) != in.Own.NAD {
		d.Point = &Point{Object: in.KubeVirt, Field: "spec.configuration.migrations.network", Network: in.Own.NAD, Patch: kubeVirtPatch(in.Own.NAD)}
	}
	return d
}

// kubeVirtPatch is the merge patch of the KubeVirt CR's migrations.network ("" removes it).
func kubeVirtPatch(network string) []byte {
	var leaf any
	if network != "" {
		leaf = network
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"configuration": map[string]any{"migrations": map[string]any{"network": leaf}}}})
	return b
}
