package netcontroller

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fault it catches: a condition that calls a shared network exclusive, or a message that
// grows with the number of offenders.
func TestExclusiveCondition(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("t/p-%02d", i)
	}
	for _, tc := range []struct {
		name       string
		names      []string
		pods, vmis []string
		status     metav1.ConditionStatus
		reason     string
		contains   []string
		lacks      string
	}{
		{name: "no network", status: metav1.ConditionTrue, reason: ReasonNoMigrationNAD},
		{name: "only virt-handlers", names: []string{"n1"}, status: metav1.ConditionTrue, reason: ReasonExclusive, contains: []string{"kubevirt/n1"}},
		{name: "a pod and a VMI", names: []string{"n1"}, pods: []string{"t/web-0"}, vmis: []string{"u/vm"}, status: metav1.ConditionFalse,
			reason: ReasonForeignAttached, contains: []string{"1 pods and 1 VMIs", "kubevirt/n1", "t/web-0, u/vm", "remove it"}},
		{name: "forty pods: five named", names: []string{"n1"}, pods: many, status: metav1.ConditionFalse, reason: ReasonForeignAttached,
			contains: []string{"40 pods", "t/p-00, t/p-01, t/p-02, t/p-03, t/p-04 and 35 more"}, lacks: "t/p-05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ExclusiveCondition("kubevirt", tc.names, tc.pods, tc.vmis)
			if c.Type != "Exclusive" || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("condition = %s/%s/%s, want Exclusive/%s/%s", c.Type, c.Status, c.Reason, tc.status, tc.reason)
			}
			for _, w := range tc.contains {
				if !strings.Contains(c.Message, w) {
					t.Errorf("message %q lacks %q", c.Message, w)
				}
			}
			if tc.lacks != "" && strings.Contains(c.Message, tc.lacks) {
				t.Errorf("message %q names %q", c.Message, tc.lacks)
			}
		})
	}
}
