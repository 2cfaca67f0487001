package netcontroller

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPoolCheckCountsWhatIsTakenBetweenChecks: between two reads of the pool, the addresses held
// are those the pool held at the last read together with those virt-handlers report now.
// Catches: the larger of the two counts (max) taken as the union: after a force-deleted
// virt-handler's allocation is released and its replacement takes a new address, the replacement
// is missed until the next read, minutes later (capacity said 3 of 5 used while 4 were); and the
// two counts added, which counts every live virt-handler twice.
func TestPoolCheckCountsWhatIsTakenBetweenChecks(t *testing.T) {
	rng := netip.MustParsePrefix("192.168.100.0/24")
	pod := func(name, ip string) *corev1.Pod {
		return handlerPod(name, "n-"+name, "net-a@migration0", ip, true)
	}
	terminating := pod("virt-handler-c", "192.168.100.4")
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Unix(0, 0)}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want int64
	}{
		{"a replacement took an address since the read", []*corev1.Pod{pod("virt-handler-a", "192.168.100.1"), pod("virt-handler-b", "192.168.100.2"), pod("virt-handler-c", "192.168.100.4")}, 4},
		{"near miss: every reported address is one the pool held", []*corev1.Pod{pod("virt-handler-a", "192.168.100.1"), pod("virt-handler-b", "192.168.100.2")}, 3},
		{"near miss: a replacement without an address yet", []*corev1.Pod{pod("virt-handler-a", "192.168.100.1"), pod("virt-handler-b", "192.168.100.2"), pod("virt-handler-c", "")}, 3},
		{"near miss: an address outside the range", []*corev1.Pod{pod("virt-handler-a", "192.168.100.1"), pod("virt-handler-b", "192.168.100.2"), pod("virt-handler-c", "10.0.0.4")}, 3},
		{"near miss: a terminating pod's address", []*corev1.Pod{pod("virt-handler-a", "192.168.100.1"), pod("virt-handler-b", "192.168.100.2"), terminating}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &poolAPI{
				// offsets 1, 2, 3: two live virt-handlers and another namespace's pod
				pools: []unstructured.Unstructured{ipPool("192.168.100.0-24", "192.168.100.0/24",
					"kubevirt/virt-handler-a", "kubevirt/virt-handler-b", "tenant/web-0")},
				pods: []string{"kubevirt/virt-handler-a", "kubevirt/virt-handler-b", "tenant/web-0"},
			}
			r := cleanupController(api)
			m := parse(t, valueA)
			first := Input{Range: rng, Pods: tc.pods[:2]}
			obs := Observe(first)
			if _, err := r.checkPool(context.Background(), m, first, &obs); err != nil {
				t.Fatal(err)
			}
			if obs.Used != 3 {
				t.Fatalf("after the read: used = %d, want the pool's 3", obs.Used)
			}
			// The pool is not read again (nothing vanished, not near full): a read would find none.
			api.pools = nil
			next := Input{Range: rng, Pods: tc.pods}
			obs = Observe(next)
			if _, err := r.checkPool(context.Background(), m, next, &obs); err != nil {
				t.Fatal(err)
			}
			if obs.Used != tc.want {
				t.Errorf("used = %d, want %d", obs.Used, tc.want)
			}
		})
	}
}
