package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Fault caught: a report of a replaced virt-handler pod's interface judging the node (verified
// pairs, or a failure refusing migrations to a node whose new pod has a healthy path) until it
// goes stale, three intervals later.
func TestCurrentReports(t *testing.T) {
	now := time.Now()
	report := func(node, uid string, failing ...string) *v1beta1.PathReport {
		r := &v1beta1.PathReport{Network: "kubevirt/net", VirtHandlerUID: types.UID(uid), IntervalSeconds: 20,
			Since:     metav1.NewMicroTime(now.Add(-time.Minute)),
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-10 * time.Second)), Completed: metav1.NewMicroTime(now.Add(-5 * time.Second))}}
		r.Name = node
		for _, p := range failing {
			r.Failing = append(r.Failing, v1beta1.PeerPath{Node: p, Reason: v1beta1.PathUnreachable})
		}
		return r
	}
	pod := func(node, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	current := VirtHandlerUIDs([]*corev1.Pod{pod("a", "a2"), pod("b", "b1"), pod("", "pending")})
	for _, tc := range []struct {
		name     string
		in       *v1beta1.PathReport
		replaced bool
	}{
		{"the node's current pod", report("b", "b1"), false},
		{"a replaced pod, failing a peer", report("a", "a1", "b"), true},
		{"a pod of another node", report("a", "b1"), true},
		{"a pod not scheduled yet", report("a", "pending"), true},
		{"no pod named (an older agent)", report("a", ""), false},
		{"a problem already", func() *v1beta1.PathReport { r := report("a", "a1"); r.Problem = v1beta1.ProbeNotAttached; return r }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.in
			out := CurrentReports([]*v1beta1.PathReport{tc.in}, current)
			got := out[0]
			if tc.replaced != (got.Problem == v1beta1.ProbeVirtHandlerReplaced) {
				t.Fatalf("problem %q, replaced want %v", got.Problem, tc.replaced)
			}
			if tc.replaced && (got.Failing != nil || got.Message == "") {
				t.Fatalf("a replaced pod's report keeps results: %+v", got)
			}
			if !tc.replaced && got != tc.in {
				t.Fatalf("an unchanged report was copied")
			}
			if tc.in.Problem != before.Problem || tc.in.LastRound != before.LastRound || len(tc.in.Failing) != len(before.Failing) {
				t.Fatalf("the input report was modified")
			}
		})
	}
	if out := CurrentReports([]*v1beta1.PathReport{report("a", "a1")}, nil); out[0].Problem != "" {
		t.Fatalf("a nil map checks nothing, got %q", out[0].Problem)
	}

	// Through Paths: the replaced pod's failure refuses nothing and its pairs are unverified.
	h := Paths("kubevirt/net", CurrentReports([]*v1beta1.PathReport{report("a", "a1", "b"), report("b", "b1")}, current))
	if st, faults, why := h.Pair("a", "b", now); st != PathUnverified || len(faults) != 0 {
		t.Fatalf("Pair = %v %v %q, want unverified without faults", st, faults, why)
	}
	// Its agent finished a round 5 s ago: not silent, though its results count for nothing.
	if h.Silent("a", now) || h.Fresh("a", now) {
		t.Fatalf("a replaced pod's report: silent %t, fresh %t; want neither", h.Silent("a", now), h.Fresh("a", now))
	}
}
