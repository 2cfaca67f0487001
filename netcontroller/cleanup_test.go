package netcontroller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// poolAPI stands in for the API server's whereabouts IPPools and pods (only the calls the
// cleanup makes) and records what it is asked to delete.
type poolAPI struct {
	client.Client // nil: any other call panics
	pools         []unstructured.Unstructured
	reservations  []unstructured.Unstructured
	pods          []string // namespace/name of the pods that exist
	poolLists     int
	deleted       []string
	updated       []unstructured.Unstructured
	// preconditions of each delete, in order
	preconditions []metav1.Preconditions
}

func (a *poolAPI) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("poolAPI cannot get %T", obj)
	}
	for _, p := range a.pools {
		if p.GetNamespace() == key.Namespace && p.GetName() == key.Name {
			p.DeepCopyInto(u)
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: ipPoolKind.Group, Resource: "ippools"}, key.Name)
}

func (a *poolAPI) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	a.updated = append(a.updated, *obj.(*unstructured.Unstructured).DeepCopy())
	return nil
}

func (a *poolAPI) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		switch l.GroupVersionKind() {
		case IPPoolList:
			a.poolLists++
			l.Items = slices.Clone(a.pools)
		case ReservationList:
			l.Items = slices.Clone(a.reservations)
		default:
			return fmt.Errorf("poolAPI cannot list %v", l.GroupVersionKind())
		}
	case *metav1.PartialObjectMetadataList:
		for _, ref := range a.pods {
			ns, name := splitRef(ref)
			if lo.Namespace == "" || lo.Namespace == ns {
				l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			}
		}
	default:
		return fmt.Errorf("poolAPI cannot list %T", list)
	}
	return nil
}

func (a *poolAPI) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	var pre metav1.Preconditions
	if do.Preconditions != nil {
		pre = *do.Preconditions
	}
	a.deleted = append(a.deleted, obj.GetNamespace()+"/"+obj.GetName())
	a.preconditions = append(a.preconditions, pre)
	a.pools = slices.DeleteFunc(a.pools, func(p unstructured.Unstructured) bool {
		return p.GetNamespace() == obj.GetNamespace() && p.GetName() == obj.GetName()
	})
	return nil
}

// reservation is a whereabouts OverlappingRangeIPReservation in kube-system.
func reservation(addr, podRef string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"podref": podRef, "ifname": "migration0"}}}
	u.SetGroupVersionKind(reservationKind)
	u.SetNamespace("kube-system")
	u.SetName(ReservationName(netip.MustParseAddr(addr)))
	return u
}

func splitRef(ref string) (string, string) {
	ns, name, _ := strings.Cut(ref, "/")
	return ns, name
}

// ipPool is a whereabouts IPPool in kube-system holding one allocation per podRef.
func ipPool(name, rng string, podRefs ...string) unstructured.Unstructured {
	allocs := map[string]any{}
	for i, ref := range podRefs {
		allocs[fmt.Sprint(i+1)] = map[string]any{"id": "c" + fmt.Sprint(i), "podref": ref, "ifname": "migration0"}
	}
	u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"range": rng, "allocations": allocs}}}
	u.SetGroupVersionKind(ipPoolKind)
	u.SetNamespace("kube-system")
	u.SetName(name)
	return u
}

func cleanupController(api *poolAPI) *Controller {
	return &Controller{Client: api, APIReader: api, KubeVirtNamespace: "kubevirt", WhereaboutsNamespace: "kube-system"}
}

// TestCleanupWaitsForReady: stale pools are looked at only once the rollout is Ready, and once
// per applied value.
// Catches: pool cleanup running before the rollout is Ready.
func TestCleanupWaitsForReady(t *testing.T) {
	api := &poolAPI{pools: []unstructured.Unstructured{ipPool("10.77.0.0-24", "10.77.0.0/24", "kubevirt/virt-handler-old")}}
	r := cleanupController(api)
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24")}
	ctx := context.Background()
	if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, &health.Snapshot{Hash: "h1", Reason: ReasonNodesNotAttached}, in); err != nil {
		t.Fatal(err)
	}
	if api.poolLists != 0 || len(api.deleted) != 0 {
		t.Fatalf("while rolling out: %d pool lists, deleted %q; want none", api.poolLists, api.deleted)
	}
	// The pass that deletes asks to be run again (a CNI DEL in flight may make whereabouts create
	// the pool anew); the second of two passes that find nothing ends the cleanup of h1.
	for range 4 {
		if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, &health.Snapshot{Hash: "h1", Ready: true}, in); err != nil {
			t.Fatal(err)
		}
	}
	if api.poolLists != 3 || !slices.Equal(api.deleted, []string{"kube-system/10.77.0.0-24"}) {
		t.Errorf("once Ready, four times: %d pool lists, deleted %q; want 3 lists and the old pool once", api.poolLists, api.deleted)
	}
}

// TestCleanupAgainAfterAnotherValue: a value cleaned, another value seen for a moment (not Ready,
// its cleanup never done), then the first value again: the pool the moment left is deleted. The
// near miss beside it: the same value reconciled again with nothing in between looks at no pool.
// Catches: "cleaned" remembered across a value in between (seen in CI as a pool of an earlier
// range left for minutes, until a manager restart).
func TestCleanupAgainAfterAnotherValue(t *testing.T) {
	api := &poolAPI{}
	r := cleanupController(api)
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24")}
	ctx := context.Background()
	ready := &health.Snapshot{Hash: "a", Ready: true}
	for range 2 { // two quiet passes: the cleanup of a is done
		if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, ready, in); err != nil {
			t.Fatal(err)
		}
	}
	lists := api.poolLists
	if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, ready, in); err != nil || api.poolLists != lists {
		t.Fatalf("a again, nothing in between: %d pool lists (was %d), %v; want none", api.poolLists, lists, err)
	}
	if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, &health.Snapshot{Hash: "b", Reason: ReasonNodesNotAttached}, in); err != nil {
		t.Fatal(err)
	}
	api.pools = append(api.pools, ipPool("10.76.0.0-25", "10.76.0.0/25", "kubevirt/virt-handler-gone"))
	if _, err := r.cleanOnce(ctx, &v1beta1.Setting{}, ready, in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(api.deleted, []string{"kube-system/10.76.0.0-25"}) {
		t.Errorf("back to a after b: deleted %q; want the pool b's moment left", api.deleted)
	}
}

// TestCleanupPassesUntilNothingIsLeft: a pool whereabouts creates anew after the cleanup deleted
// it (a CNI DEL of a virt-handler leaving the range, in flight during the delete: whereabouts'
// pool lookup creates a missing pool) is deleted by the next pass. Catches: the cleanup counted
// done after its first delete, leaving that empty pool for good (seen in test/harvestermode when
// Harvester's setting was emptied).
func TestCleanupPassesUntilNothingIsLeft(t *testing.T) {
	api := &poolAPI{pools: []unstructured.Unstructured{ipPool("10.52.0.0-24", "10.52.0.0/24")}}
	r := cleanupController(api)
	s := &v1beta1.Setting{Status: v1beta1.SettingStatus{Ranges: []string{"10.52.0.0/24"}}}
	ctx := context.Background()
	snap := &health.Snapshot{Ready: true}
	again, err := r.cleanOnce(ctx, s, snap, Input{})
	if err != nil || again != PoolCheckSpacing {
		t.Fatalf("first pass: requeue %v, %v; want another pass after %v", again, err, PoolCheckSpacing)
	}
	// A quiet pass: the late DEL has not created the pool yet.
	if again, err := r.cleanOnce(ctx, s, snap, Input{}); err != nil || again != PoolCheckSpacing {
		t.Fatalf("first quiet pass: requeue %v, %v; want one more pass", again, err)
	}
	api.pools = append(api.pools, ipPool("10.52.0.0-24", "10.52.0.0/24")) // the late DEL's pool
	if _, err := r.cleanOnce(ctx, s, snap, Input{}); err != nil {
		t.Fatal(err)
	}
	if len(api.deleted) != 2 || len(api.pools) != 0 {
		t.Errorf("deleted %q, left %d pools; want the recreated pool deleted too", api.deleted, len(api.pools))
	}
}

// TestCleanupKeepsOtherNamespacesPools: through the reads the cleanup makes, a pool that any pod
// of another namespace holds an address in survives, that pod existing or not, and so does one a
// live virt-handler holds.
// Catches: whereabouts pools held by pods of other namespaces deleted by the cleanup.
func TestCleanupKeepsOtherNamespacesPools(t *testing.T) {
	api := &poolAPI{
		pools: []unstructured.Unstructured{
			ipPool("10.77.0.0-24", "10.77.0.0/24", "kubevirt/virt-handler-a", "kubevirt/virt-handler-b"),
			ipPool("10.76.0.0-24", "10.76.0.0/24", "kubevirt/virt-handler-c"),
			ipPool("10.78.0.0-24", "10.78.0.0/24", "kubevirt/virt-handler-a", "tenant/web-0"),
			ipPool("10.79.0.0-24", "10.79.0.0/24", "tenant/gone-0", "kubevirt/virt-handler-a"),
			ipPool("10.80.0.0-24", "10.80.0.0/24", "tenant/virt-handler-a"),
			ipPool("10.81.0.0-24", "10.81.0.0/24", "kubevirt/virt-handler-live"),
			ipPool("192.168.100.0-24", "192.168.100.0/24", "kubevirt/virt-handler-gone"),
		},
		pods: []string{"tenant/web-0", "kubevirt/virt-handler-live"},
	}
	// More pools mixing a gone virt-handler with a tenant's pod: allocations are a map, so a
	// cleanup that looks at only some of a pool's holders misses the tenant in at least one of
	// them but for a chance of 2^-8.
	for i := range 8 {
		api.pools = append(api.pools, ipPool(fmt.Sprintf("10.9%d.0.0-24", i), fmt.Sprintf("10.9%d.0.0/24", i), "kubevirt/virt-handler-a", "tenant/db-"+fmt.Sprint(i)))
	}
	r := cleanupController(api)
	if _, _, err := r.CleanPools(context.Background(), netip.MustParsePrefix("192.168.100.0/24"), nil, func(string, string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kube-system/10.77.0.0-24", "kube-system/10.76.0.0-24"}; !slices.Equal(api.deleted, want) {
		t.Errorf("deleted %q, want %q", api.deleted, want)
	}
}

// TestPoolCheckReleasesOnlyGoneVirtHandlers: the first check of a range reads its pool, removes
// the allocations of virt-handlers that exist neither in the cache nor in the API server (one
// update), keeps every other one, and counts what the pool holds afterwards in the capacity.
func TestPoolCheckReleasesOnlyGoneVirtHandlers(t *testing.T) {
	api := &poolAPI{
		// keys 1..5 in ipPool's order
		pools: []unstructured.Unstructured{ipPool("192.168.100.0-24", "192.168.100.0/24",
			"kubevirt/virt-handler-gone", "kubevirt/virt-handler-cached", "kubevirt/virt-handler-new", "tenant/gone-0", "kubevirt/virt-launcher-x")},
		pods: []string{"kubevirt/virt-handler-new"}, // created after the cache's last view
	}
	r := cleanupController(api)
	m := parse(t, valueA)
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24"), Pods: []*corev1.Pod{handlerPod("virt-handler-cached", "n1", "", "", true)}}
	obs := Observation{Used: 1}
	requeue, err := r.checkPool(context.Background(), m, in, &obs)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.updated) != 1 {
		t.Fatalf("%d pool updates, want 1", len(api.updated))
	}
	left, _, _ := unstructured.NestedMap(api.updated[0].Object, "spec", "allocations")
	var refs []string
	for _, v := range left {
		refs = append(refs, v.(map[string]any)["podref"].(string))
	}
	slices.Sort(refs)
	if want := []string{"kubevirt/virt-handler-cached", "kubevirt/virt-handler-new", "kubevirt/virt-launcher-x", "tenant/gone-0"}; !slices.Equal(refs, want) {
		t.Errorf("allocations left %q, want %q", refs, want)
	}
	if obs.Used != 4 {
		t.Errorf("used = %d, want the 4 allocations the pool holds", obs.Used)
	}
	if requeue != PoolCheckInterval {
		t.Errorf("next check in %v, want %v (254 usable, 4 used: not near full)", requeue, PoolCheckInterval)
	}
	// Nothing vanished since: the next reconcile reads no pool.
	if _, err := r.checkPool(context.Background(), m, in, &Observation{}); err != nil || len(api.updated) != 1 {
		t.Errorf("second check: %v, %d updates; want none", err, len(api.updated))
	}
}

// TestCleanupDeletesEmptyPoolsOfOurRanges: through the reads the cleanup makes, the empty pools of
// the recorded ranges go (and the stale ones, as before), the current range's and never-used
// ranges' stay, and every delete carries the UID and resourceVersion the pool was read with.
// Catches: an empty pool of an earlier range left forever; a delete without precondition (a pool
// a CNI ADD wrote meanwhile would go with its new allocation).
func TestCleanupDeletesEmptyPoolsOfOurRanges(t *testing.T) {
	withRV := func(u unstructured.Unstructured, uid, rv string) unstructured.Unstructured {
		u.SetUID(types.UID(uid))
		u.SetResourceVersion(rv)
		return u
	}
	api := &poolAPI{pools: []unstructured.Unstructured{
		withRV(ipPool("10.76.0.0-25", "10.76.0.0/25"), "u1", "11"),
		withRV(ipPool("10.75.0.0-24", "10.75.0.0/24"), "u2", "12"),
		withRV(ipPool("192.168.100.0-24", "192.168.100.0/24"), "u3", "13"),
		withRV(ipPool("10.77.0.0-24", "10.77.0.0/24", "kubevirt/virt-handler-gone"), "u4", "14"),
	}}
	r := cleanupController(api)
	s := &v1beta1.Setting{Status: v1beta1.SettingStatus{Ranges: []string{"10.76.0.0/25", "192.168.100.0/24"}}}
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24")}
	if _, err := r.cleanOnce(context.Background(), s, &health.Snapshot{Hash: "h1", Ready: true}, in); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kube-system/10.76.0.0-25", "kube-system/10.77.0.0-24"}; !slices.Equal(api.deleted, want) {
		t.Fatalf("deleted %q, want %q", api.deleted, want)
	}
	for i, want := range [][2]string{{"u1", "11"}, {"u4", "14"}} {
		p := api.preconditions[i]
		if p.UID == nil || string(*p.UID) != want[0] || p.ResourceVersion == nil || *p.ResourceVersion != want[1] {
			t.Errorf("delete of %s: preconditions %+v, want UID %s resourceVersion %s", api.deleted[i], p, want[0], want[1])
		}
	}
}

// TestCleanupRangeSources: a RangeSource's ranges count as ours.
// Catches: a plugged-in source (another network's ranges) ignored.
func TestCleanupRangeSources(t *testing.T) {
	api := &poolAPI{pools: []unstructured.Unstructured{ipPool("10.73.0.0-24", "10.73.0.0/24"), ipPool("10.75.0.0-24", "10.75.0.0/24")}}
	r := cleanupController(api)
	r.RangeSources = []RangeSource{func(context.Context) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("10.73.0.0/24")}, nil
	}}
	in := Input{Range: netip.MustParsePrefix("192.168.100.0/24")}
	if _, err := r.cleanOnce(context.Background(), &v1beta1.Setting{}, &health.Snapshot{Hash: "h1", Ready: true}, in); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kube-system/10.73.0.0-24"}; !slices.Equal(api.deleted, want) {
		t.Errorf("deleted %q, want %q", api.deleted, want)
	}
}

// TestCleanupWaitsForTheRollout: the stale-pool cleanup counts as done for a value only once no
// virt-handler holds an address outside the current range. Catches: the emptied pool of the last
// range kept for good after the network is given up (the cleanup ran once, while virt-handlers
// still held the range's addresses; seen once in test/harvestermode).
func TestCleanupWaitsForTheRollout(t *testing.T) {
	rng := netip.MustParsePrefix("10.52.0.0/24")
	onB := handlerPod("h1", "node-1", "kubevirt/b@migration0", "10.52.0.4", true)
	cases := []struct {
		name string
		in   Input
		want bool
	}{
		{"pod network, a virt-handler still on the old range", Input{Pods: []*corev1.Pod{onB}}, true},
		{"pod network, every virt-handler rolled", Input{Pods: []*corev1.Pod{handlerPod("h2", "node-1", "", "", true)}}, false},
		{"on the current range", Input{Pods: []*corev1.Pod{onB}, Range: rng}, false},
		{"one still on an earlier range", Input{Pods: []*corev1.Pod{onB}, Range: netip.MustParsePrefix("192.168.100.0/24")}, true},
	}
	for _, tc := range cases {
		if got := stillRolling(tc.in); got != tc.want {
			t.Errorf("%s: stillRolling = %v, want %v", tc.name, got, tc.want)
		}
	}
}
