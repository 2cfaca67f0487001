package guard

import (
	"encoding/json"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// AnnotationDefaultNetwork replaces a pod's cluster network in Multus; its networks annotation is
// settings.NetworksAnnotation.
const AnnotationDefaultNetwork = "v1.multus-cni.io/default-network"

// Rule says which references name a migration NAD: NADNamespace/one of Names, or one of Names
// alone for an object in NADNamespace (Multus resolves a bare name in the pod's namespace).
type Rule struct {
	NADNamespace string
	Names        []string
}

// Matches reports whether ref ("ns/name", "name", either with "@iface") made by an object in
// namespace names a migration NAD.
func (r Rule) Matches(namespace, ref string) bool {
	ref, _, _ = strings.Cut(strings.TrimSpace(ref), "@")
	ref = strings.TrimSpace(ref)
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		ns, name = namespace, ref
	}
	if ns != r.NADNamespace {
		return false
	}
	for _, n := range r.Names {
		if n == name {
			return true
		}
	}
	return false
}

// multusEntry is one element of the JSON form of the networks annotation (Multus'
// NetworkSelectionElement: name, namespace, interface, ...).
type multusEntry struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// AnnotationAttaches reports whether an annotation value (list or JSON form, as Multus accepts
// for both annotations) made by an object in namespace names a migration NAD. Unlike the
// policy, which cannot parse JSON and matches it conservatively, it reads the JSON form exactly.
func (r Rule) AnnotationAttaches(namespace, value string) bool {
	v := strings.TrimSpace(value)
	if strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") {
		var entries []multusEntry
		if strings.HasPrefix(v, "{") {
			v = "[" + v + "]"
		}
		if json.Unmarshal([]byte(v), &entries) != nil {
			return false // Multus refuses it too: the pod never gets a network from it
		}
		for _, e := range entries {
			ns := e.Namespace
			if ns == "" {
				ns = namespace
			}
			if r.Matches(namespace, ns+"/"+e.Name) {
				return true
			}
		}
		return false
	}
	for _, ref := range strings.Split(v, ",") {
		if r.Matches(namespace, ref) {
			return true
		}
	}
	return false
}

// PodAttaches reports whether a pod with these annotations, in namespace, asks for a migration NAD.
func (r Rule) PodAttaches(namespace string, annotations map[string]string) bool {
	for _, k := range []string{settings.NetworksAnnotation, AnnotationDefaultNetwork} {
		if v, ok := annotations[k]; ok && r.AnnotationAttaches(namespace, v) {
			return true
		}
	}
	return false
}

// NetworksAttach reports whether KubeVirt networks (a VMI's spec.networks, a VM's template) of an
// object in namespace ask Multus for a migration NAD.
func (r Rule) NetworksAttach(namespace string, networks []kubevirtv1.Network) bool {
	for _, n := range networks {
		if n.Multus != nil && r.Matches(namespace, n.Multus.NetworkName) {
			return true
		}
	}
	return false
}
