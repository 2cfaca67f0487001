package settings

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodMigrationAddr reads the address from the network-status entry of interface migration0 only.
// Catches: the interface name not required (the pod network's or another attachment's address
// taken for the migration address).
func TestPodMigrationAddr(t *testing.T) {
	cases := []struct {
		name, status string
		want         string // "" for none
	}{
		{"migration0 after the pod network", `[{"name":"pod","interface":"eth0","ips":["10.244.1.7"],"default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0","ips":["192.168.100.7"]}]`, "192.168.100.7"},
		{"another attachment in the range, no migration0", `[{"name":"pod","interface":"eth0","ips":["10.244.1.7"],"default":true},` +
			`{"name":"kubevirt/other","interface":"net1","ips":["192.168.100.8"]}]`, ""},
		{"migration0 without addresses", `[{"name":"pod","interface":"eth0","ips":["192.168.100.9"],"default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0"}]`, ""},
		{"an unparsable address is skipped", `[{"name":"kubevirt/net-a","interface":"migration0","ips":["nope","192.168.100.10"]}]`, "192.168.100.10"},
		{"not JSON", `[{`, ""},
		// Dual stack, as KubeVirt v1.8.4's FindMigrationIP takes it: migration0's first global
		// unicast address whatever the pod network's family; link-local ones are skipped, and a
		// migration0 with none is no migration address (virt-handler does not start). Catches:
		// taking the link-local address, or preferring the pod network's family.
		{"IPv6 migration0 beside an IPv4 pod network", `[{"name":"pod","interface":"eth0","ips":["10.244.1.7"],"default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0","ips":["fd00:10:77::2"]}]`, "fd00:10:77::2"},
		{"IPv4 migration0 beside an IPv6 pod network", `[{"name":"pod","interface":"eth0","ips":["fd00:244::7"],"default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0","ips":["192.168.100.7"]}]`, "192.168.100.7"},
		{"link-local first", `[{"name":"kubevirt/net-a","interface":"migration0","ips":["fe80::1","fd00:10:77::3"]}]`, "fd00:10:77::3"},
		{"link-local only", `[{"name":"pod","interface":"eth0","ips":["10.244.1.7"],"default":true},` +
			`{"name":"kubevirt/net-a","interface":"migration0","ips":["fe80::1"]}]`, ""},
		{"an IPv4-mapped address is its IPv4 address", `[{"name":"kubevirt/net-a","interface":"migration0","ips":["::ffff:192.168.100.11"]}]`, "192.168.100.11"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "h", Annotations: map[string]string{
				NetworksAnnotation: "net-a@migration0", "k8s.v1.cni.cncf.io/network-status": tc.status}}}
			got, ok := PodMigrationAddr(p)
			if tc.want == "" {
				if ok {
					t.Errorf("migrationAddr = %s, want none", got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tc.want) {
				t.Errorf("migrationAddr = %s (%v), want %s", got, ok, tc.want)
			}
		})
	}
}

// TestPodMigrationNAD reads the migration0 request of a networks annotation in both of Multus'
// forms. Catches: the interface not required (another attachment taken for the migration
// network), a bare name not resolved in the pod's namespace, a malformed annotation (which Multus
// refuses) read as a request.
func TestPodMigrationNAD(t *testing.T) {
	for _, tc := range []struct{ name, networks, want string }{
		{"virt-operator's form", "kubevirt/net-a@migration0", "kubevirt/net-a"},
		{"a bare name is the pod's namespace", "net-a@migration0", "kubevirt/net-a"},
		{"second in a list, spaces", "tenant/lan@net1 , kubevirt/net-a @ migration0", "kubevirt/net-a"},
		{"another interface", "kubevirt/net-a@net1", ""},
		{"no interface", "kubevirt/net-a", ""},
		{"JSON form", `[{"name":"net-a","namespace":"other","interface":"migration0"}]`, "other/net-a"},
		{"JSON form, no namespace", `[{"name":"net-a","interface":"migration0"}]`, "kubevirt/net-a"},
		{"JSON object, not a list (refused)", `{"name":"net-a","interface":"migration0"}`, ""},
		{"two slashes (refused)", "a/b/net-a@migration0", ""},
		{"two ats (refused)", "kubevirt/net-a@migration0@x", ""},
		{"upper case (refused)", "kubevirt/Net-A@migration0", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Annotations: map[string]string{NetworksAnnotation: tc.networks}}}
			if got := PodMigrationNAD(p); got != tc.want {
				t.Errorf("PodMigrationNAD(%q) = %q, want %q", tc.networks, got, tc.want)
			}
		})
	}
}
