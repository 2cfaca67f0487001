package sim

import (
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// conds writes Available, Progressing, Degraded as "status/reason" each.
func conds(st *kubevirtv1.KubeVirtStatus) [3]string {
	var out [3]string
	for i, typ := range []kubevirtv1.KubeVirtConditionType{kubevirtv1.KubeVirtConditionAvailable,
		kubevirtv1.KubeVirtConditionProgressing, kubevirtv1.KubeVirtConditionDegraded} {
		for _, c := range st.Conditions {
			if c.Type == typ {
				out[i] = string(c.Status) + "/" + c.Reason
			}
		}
	}
	return out
}

// The sequences v1.8.4's syncInstallation produces (see SyncConditions). The fault caught: a
// simulator that reports Available=False while a configuration change rolls virt-handler (what
// virt-operator does only on a first install), against which a readiness gate would be tested
// in a world real clusters do not have.
func TestSyncConditionsFollowsVirtOperator(t *testing.T) {
	type step struct {
		target    string
		rolledOut bool
		want      [3]string
		phase     kubevirtv1.KubeVirtPhase
	}
	ready := [3]string{"True/" + ReasonReady, "False/" + ReasonReady, "False/" + ReasonReady}
	updating := [3]string{"True/" + ReasonUpdating, "True/" + ReasonUpdating, "True/" + ReasonUpdating}
	deploying := [3]string{"False/" + ReasonDeploying, "True/" + ReasonDeploying, "False/" + ReasonDeploying}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first install", []step{
			{"a", false, deploying, kubevirtv1.KubeVirtPhaseDeploying},
			{"a", true, ready, kubevirtv1.KubeVirtPhaseDeployed},
		}},
		{"migrations.network changed: Available stays True while virt-handler rolls", []step{
			{"a", true, ready, kubevirtv1.KubeVirtPhaseDeployed},
			{"b", false, updating, kubevirtv1.KubeVirtPhaseDeployed},
			{"b", false, updating, kubevirtv1.KubeVirtPhaseDeployed},
			{"b", true, ready, kubevirtv1.KubeVirtPhaseDeployed},
		}},
		{"changed again mid-roll", []step{
			{"a", true, ready, kubevirtv1.KubeVirtPhaseDeployed},
			{"b", false, updating, kubevirtv1.KubeVirtPhaseDeployed},
			{"c", false, updating, kubevirtv1.KubeVirtPhaseDeployed},
			{"c", true, ready, kubevirtv1.KubeVirtPhaseDeployed},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &kubevirtv1.KubeVirtStatus{}
			for i, s := range tc.steps {
				SyncConditions(st, s.target, s.rolledOut, "progress")
				if got := conds(st); got != s.want {
					t.Errorf("step %d (target %s, rolled out %v): conditions %v, want %v", i, s.target, s.rolledOut, got, s.want)
				}
				if st.Phase != s.phase {
					t.Errorf("step %d: phase %s, want %s", i, st.Phase, s.phase)
				}
				if st.TargetDeploymentID != s.target {
					t.Errorf("step %d: targetDeploymentID %q, want %q", i, st.TargetDeploymentID, s.target)
				}
				if s.rolledOut && st.ObservedDeploymentID != s.target {
					t.Errorf("step %d: observedDeploymentID %q, want %q once rolled out", i, st.ObservedDeploymentID, s.target)
				}
			}
		})
	}
}
