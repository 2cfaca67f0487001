package settings_test

import (
	"testing"

	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migranet/migranet/settings"
)

// FuzzPodMigrationNADAgreesWithClient holds the pure reading of the networks annotation against
// the network-attachment-definition client's ParseNetworkAnnotation, which Multus' own parsing
// follows, on the same values: the migration0 element found (or none) must be the same, and a
// value the client refuses must give none. The seeds run in make test.
// Catches: the pure copy drifting from the client (a value Multus refuses read as a request, or
// a valid one missed).
func FuzzPodMigrationNADAgreesWithClient(f *testing.F) {
	for _, s := range []string{
		"kubevirt/net-a@migration0", "net-a@migration0", " tenant/lan@net1 , kubevirt/net-a @ migration0 ",
		"kubevirt/net-a@net1", "kubevirt/net-a", `[{"name":"net-a","namespace":"other","interface":"migration0"}]`,
		`[{"name":"net-a","interface":"migration0"}]`, `{"name":"net-a","interface":"migration0"}`, "a/b/net-a@migration0",
		"kubevirt/net-a@migration0@x", "kubevirt/Net-A@migration0", "-a@migration0", "a-@migration0", ",", "a,,b@migration0",
		"/net-a@migration0", "kubevirt/@migration0", `"x"`, "kubevirt/net-a@", "ns/n@migration0,ns/m@migration0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Annotations: map[string]string{settings.NetworksAnnotation: value}}}
		want := ""
		if value != "" {
			if elems, err := nadutils.ParseNetworkAnnotation(value, p.Namespace); err == nil {
				for _, e := range elems {
					if e.InterfaceRequest == settings.MigrationInterface {
						want = e.Namespace + "/" + e.Name
						break
					}
				}
			}
		}
		if got := settings.PodMigrationNAD(p); got != want {
			t.Errorf("PodMigrationNAD(%q) = %q, the client says %q", value, got, want)
		}
	})
}
