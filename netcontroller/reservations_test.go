package netcontroller

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReservationName: the names whereabouts' NormalizeIP gives an unnamed network's
// reservations, and back.
// Catches: an IPv6 reservation looked up under the address as written (colons are not valid in
// a name), or the trailing-colon case missed, so a leaked IPv6 reservation is never released.
func TestReservationName(t *testing.T) {
	for _, tc := range []struct{ addr, name string }{
		{"192.168.100.5", "192.168.100.5"},
		{"fd00:10:77::5", "fd00-10-77--5"},
		{"fd00:10:77::", "fd00-10-77--0"},
		{"fd00::1:0:0:2", "fd00--1-0-0-2"},
		{"2001:db8:0:1:2:3:4:5", "2001-db8-0-1-2-3-4-5"},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := ReservationName(a); got != tc.name {
			t.Errorf("ReservationName(%s) = %q, want %q", tc.addr, got, tc.name)
		}
		if got, ok := ReservedAddr(tc.name); !ok || got != a {
			t.Errorf("ReservedAddr(%q) = %v, %v; want %s", tc.name, got, ok, a)
		}
	}
	for _, name := range []string{"net1-192.168.100.5", "mig-fd00-10-77--5", "fd00-10-77--", "", "10.0.0.1-24"} {
		if a, ok := ReservedAddr(name); ok {
			t.Errorf("ReservedAddr(%q) = %s; want none (a named network's or no reservation)", name, a)
		}
	}
}

// TestAddrAtOffset: allocation keys are decimal offsets from the range's first address.
// Catches: an offset added to the wrong base (the configured address instead of the network) or
// a key outside the range turned into an address of another range.
func TestAddrAtOffset(t *testing.T) {
	for _, tc := range []struct {
		rng, key, want string
	}{
		{"192.168.100.0/24", "1", "192.168.100.1"},
		{"192.168.100.0/24", "254", "192.168.100.254"},
		{"192.168.100.0/24", "256", ""},
		{"192.168.100.0/24", "-1", ""},
		{"192.168.100.0/24", "x", ""},
		{"fd00:10:77::/64", "18446744073709551614", "fd00:10:77:0:ffff:ffff:ffff:fffe"},
		{"fd00:10:77::/64", "18446744073709551616", ""},
	} {
		a, ok := AddrAtOffset(netip.MustParsePrefix(tc.rng), tc.key)
		if got := ""; ok {
			got = a.String()
			if got != tc.want {
				t.Errorf("AddrAtOffset(%s, %s) = %s, want %q", tc.rng, tc.key, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("AddrAtOffset(%s, %s) = none, want %s", tc.rng, tc.key, tc.want)
		}
	}
}

// TestHeldAddresses: what whereabouts will not hand out is the union of the pool and the
// reservations inside the range.
// Catches: capacity counting only the pool, so an address whose reservation leaked is reported
// free while whereabouts skips it (the range exhausts while status says half empty).
func TestHeldAddresses(t *testing.T) {
	rng := netip.MustParsePrefix("192.168.100.0/24")
	m := parse(t, `{"clusterNetwork":"migration","range":"192.168.100.0/24","exclude":["192.168.100.128/25"]}`)
	res := func(addrs ...string) []Reservation {
		var out []Reservation
		for _, a := range addrs {
			out = append(out, Reservation{Name: ReservationName(netip.MustParseAddr(a)), PodRef: "kubevirt/virt-handler-x"})
		}
		return out
	}
	pool := []netip.Addr{netip.MustParseAddr("192.168.100.1"), netip.MustParseAddr("192.168.100.2")}
	for _, tc := range []struct {
		name string
		res  []Reservation
		want int64
	}{
		{"pool only", nil, 2},
		{"reservations of pool addresses count once", res("192.168.100.1", "192.168.100.2"), 2},
		{"a reservation without pool entry is held", res("192.168.100.1", "192.168.100.3"), 3},
		{"another range's reservation is not", res("10.0.0.3"), 2},
		{"excluded, network and broadcast addresses are not", res("192.168.100.200", "192.168.100.0", "192.168.100.255"), 2},
		{"a named network's reservation is not", []Reservation{{Name: "net1-192.168.100.9"}}, 2},
	} {
		if got := int64(len(HeldAddresses(rng, pool, tc.res, m.Assignable))); got != tc.want {
			t.Errorf("%s: %d held, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPoolCheckReleasesLeakedReservations: a check releases a gone virt-handler's reservation
// along with its pool entry, and one whose pool entry is already gone (an earlier migranet
// released only the pool) or whose range is no longer configured; it keeps every reservation a
// live pod or another namespace's pod holds, and counts what is left in the range as used.
// Catches: the cleanup leaving reservations behind (whereabouts then skips the address for good).
func TestPoolCheckReleasesLeakedReservations(t *testing.T) {
	api := &poolAPI{
		pools: []unstructured.Unstructured{ipPool("192.168.100.0-24", "192.168.100.0/24",
			"kubevirt/virt-handler-gone", "kubevirt/virt-handler-cached")}, // offsets 1, 2
		reservations: []unstructured.Unstructured{
			reservation("192.168.100.1", "kubevirt/virt-handler-gone"),
			reservation("192.168.100.2", "kubevirt/virt-handler-cached"),
			reservation("192.168.100.3", "kubevirt/virt-handler-released-pool-only"),
			reservation("192.168.100.4", "tenant/gone-0"),
			reservation("192.168.100.5", "kubevirt/virt-handler-new"),
			reservation("10.77.0.9", "kubevirt/virt-handler-old-range"),
			reservation("fd00:10:77::9", "kubevirt/virt-handler-v6"),
		},
		pods: []string{"kubevirt/virt-handler-new"},
	}
	r := cleanupController(api)
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24"), Pods: []*corev1.Pod{handlerPod("virt-handler-cached", "n1", "", "", true)}}
	obs := Observation{}
	if _, err := r.checkPool(context.Background(), parse(t, valueA), in, &obs); err != nil {
		t.Fatal(err)
	}
	want := []string{"kube-system/10.77.0.9", "kube-system/192.168.100.1", "kube-system/192.168.100.3", "kube-system/fd00-10-77--9"}
	got := slices.Clone(api.deleted)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
	// Left in the range: .2 (pool and reservation), .4 and .5 (reservations only).
	if obs.Used != 3 {
		t.Errorf("used = %d, want 3", obs.Used)
	}
}
