package netcontroller

import (
	"net/netip"
	"strings"
	"testing"
	"time"

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
		// Pods of other namespaces named like virt-handlers, gone or not: never migranet's.
		{Name: "tenant-virt-handler", Range: "10.84.0.0/24", PodRefs: []string{"tenant/virt-handler-a1"}},
		{Name: "other-kubevirt-install", Range: "10.85.0.0/24", PodRefs: []string{"kubevirt-b/virt-handler-a1", "kubevirt-b/virt-handler-b2"}},
		{Name: "prefix-lookalike-namespace", Range: "10.86.0.0/24", PodRefs: []string{"kubevirt2/virt-handler-a1"}},
		{Name: "name-not-a-handler", Range: "10.87.0.0/24", PodRefs: []string{"kubevirt/virt-handlerx"}},
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
	// Catches: deleting a pool any pod of another namespace holds an address in, whether that
	// pod exists or not — even when every pod the cluster has is reported gone.
	gone := func(string, string) bool { return false }
	for _, name := range StalePools(pools, netip.Prefix{}, "kubevirt", gone) {
		for _, p := range pools {
			if p.Name != name {
				continue
			}
			for _, ref := range p.PodRefs {
				if !strings.HasPrefix(ref, "kubevirt/") {
					t.Errorf("pool %s deleted although %s holds an address in it", name, ref)
				}
			}
		}
	}
}

// TestEmptyPools: which empty pools the cleanup deletes.
func TestEmptyPools(t *testing.T) {
	ours := []netip.Prefix{
		netip.MustParsePrefix("10.76.0.0/25"), netip.MustParsePrefix("192.168.100.0/24"),
		netip.MustParsePrefix("fd00:10:77::/64"), netip.MustParsePrefix("10.74.0.0/24"),
	}
	pools := []Pool{
		{Name: "10.76.0.0-25", Range: "10.76.0.0/25"},
		{Name: "192.168.100.0-24", Range: "192.168.100.0/24"},
		{Name: "fd00-10-77---64", Range: "fd00:10:77::/64"},
		// whereabouts stores the range as the NAD spells it: a host address in it names the same range.
		{Name: "spelled-with-a-host", Range: "10.74.0.9/24"},
		{Name: "never-ours", Range: "10.75.0.0/24"},
		{Name: "ours-but-held", Range: "10.76.0.0/25", PodRefs: []string{"kubevirt/virt-handler-gone"}},
		{Name: "narrower-than-ours", Range: "10.76.0.0/26"},
		{Name: "wider-than-ours", Range: "10.76.0.0/24"},
		{Name: "no-range"},
		{Name: "bad-range", Range: "10.76.0.0"},
	}
	cases := []struct {
		name    string
		current netip.Prefix
		ours    []netip.Prefix
		want    []string
	}{
		// Catches: an empty pool of an earlier range of migranet's left forever (Harvester #9501).
		{"network on", netip.MustParsePrefix("192.168.100.0/24"), ours,
			[]string{"10.76.0.0-25", "fd00-10-77---64", "spelled-with-a-host"}},
		// Catches: deleting the current range's pool, spelled either way.
		{"current spelled with a host", netip.MustParsePrefix("10.74.0.1/24"), ours,
			[]string{"10.76.0.0-25", "192.168.100.0-24", "fd00-10-77---64"}},
		{"disabled: the last range is an earlier one too", netip.Prefix{}, ours,
			[]string{"10.76.0.0-25", "192.168.100.0-24", "fd00-10-77---64", "spelled-with-a-host"}},
		// Catches: deleting an empty pool of a range migranet never used.
		{"nothing recorded: nothing deleted", netip.MustParsePrefix("192.168.100.0/24"), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EmptyPools(pools, tc.current, tc.ours)); diff != "" {
				t.Errorf("EmptyPools (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLeakedAllocations: which allocations of the current pool migranet releases.
func TestLeakedAllocations(t *testing.T) {
	live := map[string]bool{"kubevirt/virt-handler-live": true, "tenant/web-0": true}
	exists := func(ns, name string) bool { return live[ns+"/"+name] }
	a := func(ref string) Allocation { return Allocation{ID: "c-" + ref, PodRef: ref, IfName: "migration0"} }
	cases := []struct {
		name   string
		allocs map[string]Allocation
		want   []string
	}{
		{"empty pool", nil, nil},
		{"only live virt-handlers", map[string]Allocation{"2": a("kubevirt/virt-handler-live")}, nil},
		// Catches: leaving the addresses of force-deleted virt-handlers held until the range is exhausted.
		{"gone virt-handlers, in address order", map[string]Allocation{
			"10": a("kubevirt/virt-handler-x"), "2": a("kubevirt/virt-handler-live"), "3": a("kubevirt/virt-handler-y"),
		}, []string{"3", "10"}},
		// Catches: releasing another namespace's address (a tenant's pod on the same NAD, or a pod
		// that merely looks like a virt-handler), whether it exists or not.
		{"other namespaces are never touched", map[string]Allocation{
			"2": a("tenant/web-0"), "3": a("tenant/web-1"), "4": a("tenant/virt-handler-x"),
			"5": a("kubevirt2/virt-handler-x"), "6": a("kubevirt-b/virt-handler-x"),
		}, nil},
		// Catches: releasing an address of a pod migranet does not own in its own namespace.
		{"only virt-handler-* of the KubeVirt namespace", map[string]Allocation{
			"2": a("kubevirt/virt-launcher-x"), "3": a("kubevirt/virt-handlerx"), "4": a("kubevirt/virt-api-1"),
			"5": a("no-slash"), "6": a(""), "7": a("kubevirt/virt-handler-gone"),
		}, []string{"7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LeakedAllocations(tc.allocs, "kubevirt", exists)); diff != "" {
				t.Errorf("LeakedAllocations (-want +got):\n%s", diff)
			}
		})
	}
	// Catches: releasing the address of a virt-handler that exists only in the API server (just
	// created, not yet in the cache): the caller passes cache ∪ API as podExists.
	cacheOnly := func(ns, name string) bool { return false }
	api := map[string]bool{"kubevirt/virt-handler-new": true}
	both := func(ns, name string) bool { return cacheOnly(ns, name) || api[ns+"/"+name] }
	allocs := map[string]Allocation{"2": a("kubevirt/virt-handler-new"), "3": a("kubevirt/virt-handler-gone")}
	if diff := cmp.Diff([]string{"3"}, LeakedAllocations(allocs, "kubevirt", both)); diff != "" {
		t.Errorf("LeakedAllocations with the API's view (-want +got):\n%s", diff)
	}
}

// TestPoolName follows whereabouts' IPPoolName/normalizeRange for a NAD without network_name.
// Catches: checking a pool whereabouts does not use (leaks would never be found).
func TestPoolName(t *testing.T) {
	for rng, want := range map[string]string{
		"192.168.100.0/24": "192.168.100.0-24",
		"192.168.100.7/24": "192.168.100.0-24",
		"10.88.0.0/29":     "10.88.0.0-29",
		"fd00:10::/64":     "fd00-10---64",
	} {
		if got := PoolName(netip.MustParsePrefix(rng)); got != want {
			t.Errorf("PoolName(%s) = %s, want %s", rng, got, want)
		}
	}
}

func TestNearFull(t *testing.T) {
	m := parse(t, `{"clusterNetwork":"migration","range":"10.88.0.0/29","exclude":["10.88.0.1"]}`) // 5 usable
	for used, want := range map[int64]bool{0: false, 3: false, 4: true, 5: true} {
		if got := nearFull(m, used); got != want {
			t.Errorf("nearFull(5 usable, %d used) = %v, want %v", used, got, want)
		}
	}
	// 10.0.0.0/27: 30 usable; 3 free is exactly 10 %, not below it.
	m = parse(t, `{"clusterNetwork":"migration","range":"10.0.0.0/27"}`)
	for used, want := range map[int64]bool{27: false, 28: true} {
		if got := nearFull(m, used); got != want {
			t.Errorf("nearFull(30 usable, %d used) = %v, want %v", used, got, want)
		}
	}
}

// TestNextPoolCheck: when the current pool is looked at for leaks.
// Catches: a check on every reconcile (an API GET per pod event), or none after a deletion or
// while the range runs full (a leak left until the backstop).
func TestNextPoolCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name           string
		last, now      time.Time
		prompt, nearly bool
		want           time.Duration
	}{
		{"never checked this range", time.Time{}, t0, false, false, 0},
		{"just checked, nothing happened", t0, t0.Add(time.Second), false, false, PoolCheckInterval - time.Second},
		{"backstop due", t0, t0.Add(PoolCheckInterval), false, false, 0},
		{"pod vanished, spaced", t0, t0.Add(time.Second), true, false, PoolCheckSpacing - time.Second},
		{"pod vanished, due", t0, t0.Add(PoolCheckSpacing), true, true, 0},
		{"near full", t0, t0.Add(5 * time.Second), false, true, PoolCheckNearFull - 5*time.Second},
	}
	for _, tc := range cases {
		if got := nextPoolCheck(tc.last, tc.now, tc.prompt, tc.nearly); got != tc.want {
			t.Errorf("%s: next check in %s, want %s", tc.name, got, tc.want)
		}
	}
}
