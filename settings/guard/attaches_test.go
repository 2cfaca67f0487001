package guard

import (
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// The fault these catch: a spelling Multus accepts that the rule misses (a VM joins the
// migration network), or a reference to another namespace's NAD of the same name counted.
func TestPodAttaches(t *testing.T) {
	r := Rule{NADNamespace: "kubevirt", Names: []string{"vm-migration-network-0123456789"}}
	const nad = "vm-migration-network-0123456789"
	for _, tc := range []struct {
		name, namespace string
		annotations     map[string]string
		want            bool
	}{
		{"namespace/name", "tenant", map[string]string{settings.NetworksAnnotation: "kubevirt/" + nad}, true},
		{"with @interface", "tenant", map[string]string{settings.NetworksAnnotation: "kubevirt/" + nad + "@net1"}, true},
		{"second in a list, spaces", "tenant", map[string]string{settings.NetworksAnnotation: "tenant/lan , kubevirt/" + nad + " "}, true},
		{"bare name inside KubeVirt's namespace", "kubevirt", map[string]string{settings.NetworksAnnotation: nad}, true},
		{"bare name elsewhere is that namespace's NAD", "tenant", map[string]string{settings.NetworksAnnotation: nad}, false},
		{"JSON list with namespace", "tenant", map[string]string{settings.NetworksAnnotation: `[{"name":"` + nad + `","namespace":"kubevirt","interface":"m0"}]`}, true},
		{"JSON list, namespace defaults to the pod's", "kubevirt", map[string]string{settings.NetworksAnnotation: `[{"name":"` + nad + `"}]`}, true},
		{"JSON list, same name in the tenant's namespace", "tenant", map[string]string{settings.NetworksAnnotation: `[{"name":"` + nad + `"}]`}, false},
		{"JSON single object", "tenant", map[string]string{settings.NetworksAnnotation: `{"name":"` + nad + `","namespace":"kubevirt"}`}, true},
		{"default-network override", "tenant", map[string]string{AnnotationDefaultNetwork: "kubevirt/" + nad}, true},
		{"another NAD of KubeVirt's namespace", "tenant", map[string]string{settings.NetworksAnnotation: "kubevirt/other"}, false},
		{"a name that only starts like it", "tenant", map[string]string{settings.NetworksAnnotation: "kubevirt/" + nad + "0"}, false},
		{"malformed JSON", "tenant", map[string]string{settings.NetworksAnnotation: `[{"name":`}, false},
		{"no annotations", "tenant", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.PodAttaches(tc.namespace, tc.annotations); got != tc.want {
				t.Errorf("PodAttaches(%q, %v) = %v, want %v", tc.namespace, tc.annotations, got, tc.want)
			}
		})
	}
}

func TestNetworksAttach(t *testing.T) {
	r := Rule{NADNamespace: "kubevirt", Names: []string{"old", "new"}}
	multus := func(name string) []kubevirtv1.Network {
		return []kubevirtv1.Network{
			{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
			{Name: "m", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: name}}},
		}
	}
	for _, tc := range []struct {
		namespace string
		networks  []kubevirtv1.Network
		want      bool
	}{
		{"tenant", multus("kubevirt/new"), true},
		{"tenant", multus("kubevirt/old"), true}, // the previous NAD, while a range change rolls
		{"kubevirt", multus("new"), true},
		{"tenant", multus("new"), false},
		{"tenant", multus("kubevirt/lan"), false},
		{"tenant", nil, false},
	} {
		if got := r.NetworksAttach(tc.namespace, tc.networks); got != tc.want {
			t.Errorf("NetworksAttach(%q, %+v) = %v, want %v", tc.namespace, tc.networks, got, tc.want)
		}
	}
}

func TestData(t *testing.T) {
	got := Data("kubevirt", []string{"b", " a ", "", "b"})
	if got[KeyNamespace] != "kubevirt" || got[KeyNames] != "a b" {
		t.Errorf("Data = %v, want namespace kubevirt, names \"a b\"", got)
	}
}
