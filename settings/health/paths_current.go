package health

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migranet/migranet/settings/v1beta1"
)

// VirtHandlerUIDs maps the UID of each virt-handler pod to its node: what CurrentReports checks
// reports against. Pods not yet scheduled are left out.
func VirtHandlerUIDs(pods []*corev1.Pod) map[types.UID]string {
	out := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			out[p.UID] = p.Spec.NodeName
		}
	}
	return out
}

// CurrentReports returns reports with each one that probed from a virt-handler pod its node no
// longer runs (replaced; the agent has not reported from the new pod yet) read as the problem
// v1beta1.ProbeVirtHandlerReplaced, without results: a gone pod's interface neither verifies nor
// refuses anything. Its last round stays, as when the agent last finished one (its silence). Reports that name no pod (agents before the field) pass as they are; a nil
// map checks nothing. The reports are not modified: a changed one is a shallow copy.
func CurrentReports(reports []*v1beta1.PathReport, virtHandlers map[types.UID]string) []*v1beta1.PathReport {
	if virtHandlers == nil {
		return reports
	}
	out := reports
	copied := false
	for i, r := range reports {
		if r == nil || r.Problem != "" || r.VirtHandlerUID == "" || virtHandlers[r.VirtHandlerUID] == r.Name {
			continue
		}
		if !copied {
			out, copied = append([]*v1beta1.PathReport(nil), reports...), true
		}
		c := *r
		c.Problem = v1beta1.ProbeVirtHandlerReplaced
		c.Message = fmt.Sprintf("its results are from virt-handler pod %s, which %s no longer runs; the agent has not reported from the current one yet", r.VirtHandlerUID, r.Name)
		c.Failing = nil
		out[i] = &c
	}
	return out
}
