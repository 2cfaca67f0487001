package netcontroller

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStalePools(t *testing.T) {
	live := map[string]bool{"kubevirt/virt-handler-live": true}
	exists := func(ns, name string) bool { return live[ns+"/"+name] }
	pools := []Pool{
		{Name: "old", Range: "10.77.0.0/25", PodRefs: []string{"kubevirt/virt-handler-a1", "kubevirt/virt-handler-b2"}},
		{Name: "current", Range: "192.168.100.0/24", PodRefs: []string{"kubevirt/virt-handler-a1"}},
		{Name: "current-spelled-differently", Range: "192.168.100.7/24", PodRefs: []string{"kubevirt/virt-handler-a1"}},
		{Name: "still-held", Range: "10.78.0.0/24", PodRefs: []string{"kubevirt/virt-handler-a1", "kubevirt/virt-handler-live"}},
		{Name: "someone-elses", Range: "10.79.0.0/24", PodRefs: []string{"tenant/web-0"}},
		{Name: "mixed", Range: "10.80.0.0/24", PodRefs: []string{"kubevirt/virt-handler-a1", "tenant/db-0"}},
		{Name: "other-kubevirt-pod", Range: "10.81.0.0/24", PodRefs: []string{"kubevirt/virt-launcher-x"}},
		{Name: "empty", Range: "10.82.0.0/24"},
		{Name: "bad-ref", Range: "10.83.0.0/24", PodRefs: []string{"no-slash"}},
	}
	cases := []struct {
		name    string
		current netip.Prefix
		want    []string
	}{
		{"network on", netip.MustParsePrefix("192.168.100.0/24"), []string{"old"}},
		{"disabled: the current range's pool goes too once its pods are gone",
			netip.Prefix{}, []string{"old", "current", "current-spelled-differently"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StalePools(pools, tc.current, "kubevirt", exists)); diff != "" {
				t.Errorf("StalePools (-want +got):\n%s", diff)
			}
		})
	}
}
