package sim

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPoolName follows whereabouts' IPPoolName and normalizeRange (pkg/storage/kubernetes/ipam.go)
// on the range LoadIPAMConfig keeps (ipNet.String(), pkg/config/config.go).
// Catches: a pool name whereabouts would not use (migranet would then look at the wrong pool).
func TestPoolName(t *testing.T) {
	cases := []struct{ config, want string }{
		{`{"ipam":{"type":"whereabouts","range":"192.168.100.0/24"}}`, "192.168.100.0-24"},
		{`{"ipam":{"type":"whereabouts","range":"192.168.100.7/24"}}`, "192.168.100.0-24"},
		{`{"ipam":{"type":"whereabouts","range":"10.88.0.0/29","network_name":"mig"}}`, "mig-10.88.0.0-29"},
		{`{"ipam":{"type":"whereabouts","range":"fd00:10::/64"}}`, "fd00-10---64"},
		// A plugin list: the IPAM of the plugin that makes the interface.
		{`{"cniVersion":"1.0.0","plugins":[{"type":"ipvlan","master":"ens5","ipam":{"type":"whereabouts","range":"10.89.0.0/28"}},{"type":"tuning"}]}`, "10.89.0.0-28"},
	}
	for _, tc := range cases {
		r, err := ParseWhereaboutsRange(tc.config)
		if err != nil {
			t.Fatalf("%s: %v", tc.config, err)
		}
		if got := PoolName(r.NetworkName, r.Prefix); got != tc.want {
			t.Errorf("%s: pool %q, want %q", tc.config, got, tc.want)
		}
	}
	if _, err := ParseWhereaboutsRange(`{"ipam":{"type":"host-local","range":"10.0.0.0/24"}}`); err == nil {
		t.Error("a non-whereabouts IPAM was accepted")
	}
}

// TestOffsetKey follows toAllocationMap / toIPReservationList (IPGetOffset, IPAddOffset): keys
// are the decimal offset from the range's first address; keys that are not offsets are ignored.
func TestOffsetKey(t *testing.T) {
	cases := []struct {
		rng, addr, key string
	}{
		{"10.88.0.0/29", "10.88.0.2", "2"},
		{"192.168.100.0/24", "192.168.100.254", "254"},
		{"10.0.0.0/16", "10.0.1.1", "257"},
		{"fd00::/64", "fd00::1:0", "65536"},
	}
	for _, tc := range cases {
		p, a := netip.MustParsePrefix(tc.rng), netip.MustParseAddr(tc.addr)
		if got := OffsetKey(p, a); got != tc.key {
			t.Errorf("OffsetKey(%s, %s) = %s, want %s", tc.rng, tc.addr, got, tc.key)
		}
		if got, ok := AddrAtKey(p, tc.key); !ok || got != a {
			t.Errorf("AddrAtKey(%s, %s) = %s %v, want %s", tc.rng, tc.key, got, ok, tc.addr)
		}
	}
	for _, bad := range []string{"x", "-1", "", "1e3"} {
		if a, ok := AddrAtKey(netip.MustParsePrefix("10.0.0.0/24"), bad); ok {
			t.Errorf("AddrAtKey(%q) = %s, want ignored", bad, a)
		}
	}
}

// TestLowestFree follows IterateForAssignment (pkg/allocate) with GetIPRange's first and last
// usable address: network and last address never, excluded subnets skipped whole, reserved
// addresses skipped, the lowest remaining one wins; an exhausted range fails with
// AssignmentError's text.
// Catches: handing out the broadcast, an excluded or a held address; a different exhaustion text.
func TestLowestFree(t *testing.T) {
	r29, err := ParseWhereaboutsRange(`{"ipam":{"type":"whereabouts","range":"10.88.0.0/29","exclude":["10.88.0.1"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	r28, err := ParseWhereaboutsRange(`{"ipam":{"type":"whereabouts","range":"10.88.0.0/28","exclude":["10.88.0.0/30","10.88.0.8/32"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	held := func(addrs ...string) map[netip.Addr]bool {
		m := map[netip.Addr]bool{}
		for _, a := range addrs {
			m[netip.MustParseAddr(a)] = true
		}
		return m
	}
	cases := []struct {
		name     string
		r        WhereaboutsRange
		reserved map[netip.Addr]bool
		want     string
		err      string
	}{
		{"empty pool: first after the excluded .1", r29, nil, "10.88.0.2", ""},
		{"a hole is reused first", r29, held("10.88.0.2", "10.88.0.4"), "10.88.0.3", ""},
		{"the last usable address", r29, held("10.88.0.2", "10.88.0.3", "10.88.0.4", "10.88.0.5"), "10.88.0.6", ""},
		{"exhausted: never the broadcast", r29, held("10.88.0.2", "10.88.0.3", "10.88.0.4", "10.88.0.5", "10.88.0.6"), "",
			"Could not allocate IP in range: ip: 10.88.0.1 / - 10.88.0.6 / range: 10.88.0.0/29 / excludeRanges: [10.88.0.1]"},
		{"excluded subnet skipped whole", r28, nil, "10.88.0.4", ""},
		{"excluded address in the middle", r28, held("10.88.0.4", "10.88.0.5", "10.88.0.6", "10.88.0.7"), "10.88.0.9", ""},
		{"/28 exhausted", r28, held("10.88.0.4", "10.88.0.5", "10.88.0.6", "10.88.0.7", "10.88.0.9", "10.88.0.10",
			"10.88.0.11", "10.88.0.12", "10.88.0.13", "10.88.0.14"), "",
			"Could not allocate IP in range: ip: 10.88.0.1 / - 10.88.0.14 / range: 10.88.0.0/28 / excludeRanges: [10.88.0.0/30 10.88.0.8/32]"},
		{"/31 has no usable address", WhereaboutsRange{Prefix: netip.MustParsePrefix("10.0.0.0/31")}, nil, "",
			"net mask is too short, subnet 10.0.0.0/31 has no usable IP addresses, it is too small"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LowestFree(tc.r, tc.reserved)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %s, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestTornDown: the kubelet runs CNI DEL only for a sandbox it tears down.
// Catches: releasing the address of a force-deleted pod (which leaks in a real cluster), or
// keeping that of a gracefully deleted or finished one.
func TestTornDown(t *testing.T) {
	now := metav1.Now()
	grace := func(s int64) *int64 { return &s }
	cases := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
		{"graceful delete", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(30)}}, true},
		{"force delete (grace 0)", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(0)}}, false},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true},
	}
	for _, tc := range cases {
		if got := tornDown(&tc.pod); got != tc.want {
			t.Errorf("%s: tornDown = %v, want %v", tc.name, got, tc.want)
		}
	}
}
