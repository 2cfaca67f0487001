package netcontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodAddrs: the faults it catches are a memo keyed by the UID alone (a pod whose
// network-status changed keeps its old address: the row "new resourceVersion"), one that lets
// pods without a UID share an entry ("no UID"), and one that never forgets (a pod gone for an
// observation answers from memory: "forgotten").
func TestPodAddrs(t *testing.T) {
	pod := func(uid, rv, ip string) *corev1.Pod {
		p := handlerPod("vh-"+uid, "n1", "", ip, true)
		p.UID, p.ResourceVersion = types.UID(uid), rv
		return p
	}
	// rewrite changes a pod's address without a new resourceVersion: what only a memo answers
	// with the old address.
	rewrite := func(p *corev1.Pod, ip string) *corev1.Pod { return pod(string(p.UID), p.ResourceVersion, ip) }
	a := pod("a", "1", "10.0.0.1")
	b := pod("b", "1", "10.0.0.2")
	// Looked at first too: pods a memo must not answer for another pod of the same keys.
	noUID, noRV := pod("", "1", "10.0.0.6"), pod("c", "", "10.0.0.5")
	for _, tc := range []struct {
		name   string
		rounds [][]*corev1.Pod // observations before the one judged, each the pods it looks at
		pod    *corev1.Pod
		want   string
	}{
		{"same resourceVersion: remembered", nil, rewrite(a, "10.0.0.9"), "10.0.0.1"},
		{"new resourceVersion: decoded anew", nil, pod("a", "2", "10.0.0.9"), "10.0.0.9"},
		{"no UID: decoded every time", nil, pod("", "1", "10.0.0.7"), "10.0.0.7"},
		{"no resourceVersion: decoded every time", nil, pod("c", "", "10.0.0.8"), "10.0.0.8"},
		{"seen in the last observation: remembered", [][]*corev1.Pod{{b}}, rewrite(b, "10.0.0.9"), "10.0.0.2"},
		{"forgotten after an observation without it", [][]*corev1.Pod{{b}, {b}}, rewrite(a, "10.0.0.9"), "10.0.0.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &PodAddrs{}
			first := m.Round()
			for _, p := range []*corev1.Pod{a, b, noUID, noRV} {
				first(p)
			}
			for _, pods := range tc.rounds {
				r := m.Round()
				for _, p := range pods {
					r(p)
				}
			}
			got, ok := m.Round()(tc.pod)
			if !ok || got.String() != tc.want {
				t.Errorf("address %v (found %v), want %s", got, ok, tc.want)
			}
		})
	}
	if got, ok := (*PodAddrs)(nil).Round()(a); !ok || got.String() != "10.0.0.1" {
		t.Errorf("nil PodAddrs: %v %v", got, ok)
	}
}
