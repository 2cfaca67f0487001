package hcomode

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/clusterread"
)

// Values of the manager's --hco flag.
const (
	ModeAuto = "auto"
	ModeOn   = "on"
	ModeOff  = "off"
)

// Modes lists the flag's values, for its help and its error.
var Modes = []string{ModeAuto, ModeOn, ModeOff}

// HCO's names (hyperconverged-cluster-operator v1.18.1): the API group, the kind, and the one name
// its CRD allows (metadata.name pattern in deploy/crds/hco00.crd.yaml).
const (
	Group    = "hco.kubevirt.io"
	Kind     = "HyperConverged"
	Resource = "hyperconvergeds"
	Name     = "kubevirt-hyperconverged"
)

// Mode is the outcome of Detect.
type Mode struct {
	// On: HCO mode.
	On bool
	// Why says what decided, for the start-up log.
	Why string
	// HyperConverged is the HyperConverged CR that owns the KubeVirt CR (or, forced on without
	// one yet, the one HCO would create in the KubeVirt namespace).
	HyperConverged client.ObjectKey
	// Field is the network field of the API version the cluster serves; zero when off.
	Field Field
}

// Detect decides the mode from the flag: on and off as given; auto is on when the KubeVirt CR in
// kubevirtNamespace has a controller owner of kind HyperConverged. The API version written is
// the one the cluster serves (FieldFor). On is refused when the HyperConverged resource is not
// served: migranet could not write the field.
func Detect(ctx context.Context, mode string, r client.Reader, mapper meta.RESTMapper, kubevirtNamespace string) (Mode, error) {
	switch mode {
	case ModeOff:
		return Mode{Why: "--hco=off"}, nil
	case ModeOn, ModeAuto:
	default:
		return Mode{}, fmt.Errorf("--hco=%q: want one of %v", mode, Modes)
	}
	kv, err := clusterread.KubeVirtCR(ctx, r, kubevirtNamespace)
	if err != nil {
		return Mode{}, fmt.Errorf("reading the KubeVirt CR to choose the HCO mode (--hco=%s): %w", mode, err)
	}
	var owner *metav1.OwnerReference
	if kv != nil {
		owner = HyperConvergedOwner(kv)
	}
	if mode == ModeAuto && owner == nil {
		why := "--hco=auto: no KubeVirt CR in " + kubevirtNamespace
		if kv != nil {
			why = fmt.Sprintf("--hco=auto: KubeVirt %s/%s has no controller owner of kind %s (not managed by HCO)", kv.Namespace, kv.Name, Kind)
		}
		return Mode{Why: why}, nil
	}
	field, err := FieldFor(mapper)
	if err != nil {
		return Mode{}, fmt.Errorf("--hco=%s: %w", mode, err)
	}
	m := Mode{On: true, Field: field, HyperConverged: client.ObjectKey{Namespace: kubevirtNamespace, Name: Name}}
	switch {
	case owner != nil:
		m.HyperConverged.Name = owner.Name
		m.Why = fmt.Sprintf("--hco=%s: KubeVirt %s/%s is owned by %s %s/%s; writing %s", mode, kv.Namespace, kv.Name, Kind, kv.Namespace, owner.Name, field)
	default:
		m.Why = fmt.Sprintf("--hco=on (no KubeVirt CR owned by a %s in %s yet); writing %s", Kind, kubevirtNamespace, field)
	}
	return m, nil
}

// HyperConvergedOwner is kv's controller owner reference when it is a HyperConverged, else nil.
func HyperConvergedOwner(kv *kubevirtv1.KubeVirt) *metav1.OwnerReference {
	if kv == nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(kv)
	if ref == nil || ref.Kind != Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != Group {
		return nil
	}
	return ref
}
