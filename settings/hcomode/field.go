package hcomode

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The HyperConverged API versions that carry the migration network, and where (HCO v1.18.1
// deploy/crds/hco00.crd.yaml): v1beta1 spec.liveMigrationConfig.network; v1 (HCO v1.18, with a
// conversion webhook) spec.virtualization.liveMigrationConfig.network. Both are copied by
// hcLiveMigrationToKv into the KubeVirt CR's spec.configuration.migrations.network.
const (
	V1beta1 = "v1beta1"
	V1      = "v1"
)

// Field is the HyperConverged CR's migration network field in one API version. The CR is read and
// patched unstructured: importing HCO's API package would drag in its module's replace directives.
type Field struct {
	Version string
	path    []string
}

// FieldOf is the field of version v (V1beta1 or V1); ok false for any other version.
func FieldOf(v string) (Field, bool) {
	switch v {
	case V1beta1:
		return Field{Version: V1beta1, path: []string{"spec", "liveMigrationConfig", "network"}}, true
	case V1:
		return Field{Version: V1, path: []string{"spec", "virtualization", "liveMigrationConfig", "network"}}, true
	}
	return Field{}, false
}

// FieldFor picks the version the cluster serves: v1beta1 (every HCO release; its storage version
// in v1.18) when served, else v1.
func FieldFor(mapper meta.RESTMapper) (Field, error) {
	mappings, err := mapper.RESTMappings(schema.GroupKind{Group: Group, Kind: Kind})
	if err != nil {
		return Field{}, fmt.Errorf("the API server does not serve %s.%s (HCO's HyperConverged CRD): %w", Resource, Group, err)
	}
	var served []string
	for _, m := range mappings {
		served = append(served, m.GroupVersionKind.Version)
	}
	for _, v := range []string{V1beta1, V1} {
		for _, s := range served {
			if s == v {
				f, _ := FieldOf(v)
				return f, nil
			}
		}
	}
	return Field{}, fmt.Errorf("%s.%s is served in versions %v, none of which migranet knows (%s, %s)", Resource, Group, served, V1beta1, V1)
}

// GVK is the HyperConverged kind in f's version.
func (f Field) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: Group, Version: f.Version, Kind: Kind}
}

// New is an empty HyperConverged object of f's version, to read into.
func (f Field) New() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(f.GVK())
	return u
}

// Path is the field's path, e.g. spec.liveMigrationConfig.network.
func (f Field) Path() string { return strings.Join(f.path, ".") }

// String names the field with its API version, for messages.
func (f Field) String() string { return f.Path() + " (" + Group + "/" + f.Version + ")" }

// Get reads the network u names; "" when unset, null or not a string.
func (f Field) Get(u *unstructured.Unstructured) string {
	if u == nil || len(f.path) == 0 {
		return ""
	}
	s, _, _ := unstructured.NestedString(u.Object, f.path...)
	return s
}

// Patch is the JSON merge patch (RFC 7386) that sets the field to network, or removes it for "",
// and touches nothing else.
func (f Field) Patch(network string) []byte {
	var leaf any
	if network != "" {
		leaf = network
	}
	for i := len(f.path) - 1; i >= 0; i-- {
		leaf = map[string]any{f.path[i]: leaf}
	}
	b, _ := json.Marshal(leaf) // maps of strings and nil always marshal
	return b
}
