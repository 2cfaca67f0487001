package migrationcheck

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmissionChange(t *testing.T) {
	base := func() *corev1.Node { return node("n", withLabels("a", "1")) }
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now(); n.ResourceVersion = "2" }, false},
		{"taint re-added with a new time", func(n *corev1.Node) {
			now := metav1.NewTime(time.Now())
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}}
		}, false},
		{"label value", func(n *corev1.Node) { n.Labels["a"] = "2" }, true},
		{"label added", func(n *corev1.Node) { n.Labels["b"] = "1" }, true},
		{"cordoned", cordoned, true},
		{"not ready", notReady, true},
		{"taint effect", func(n *corev1.Node) { n.Spec.Taints[0].Effect = corev1.TaintEffectNoExecute }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			then := metav1.NewTime(time.Now().Add(-time.Hour))
			o.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &then}}
			n := o.DeepCopy()
			tt.change(n)
			if got := admissionChange(o, n); got != tt.want {
				t.Fatalf("admissionChange = %v, want %v", got, tt.want)
			}
		})
	}
}
