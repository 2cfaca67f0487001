package migrationcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

var (
	report   = checktest.PathReport
	failing  = checktest.Failing
	healthOf = checktest.Health
)

// pathCreate is baseCreate with every node's fresh report, nothing failing, judged at checktest.Now.
func pathCreate() CreateInput {
	in := baseCreate()
	in.Paths, in.Now = checktest.HealthyPaths("node-0", "node-1", "node-2"), checktest.Now
	return in
}

// TestEvaluateCreatePaths: rule pathHealthy, judged with the node index and by walking the nodes
// (the same decisions either way). Faults caught, each seen to fail once: targets behind a failing
// path kept as candidates (the all-failing cases admitted); feasibleTarget refusing when only a
// failing path is left (its denial instead of pathHealthy's); the failing nodes named in
// feasibleTarget's denial when nothing is feasible; stale or unprobed targets refused instead of
// warned; a stale report's faults still refusing; an unknown or foreign health judged.
func TestEvaluateCreatePaths(t *testing.T) {
	mtu := "9000-byte frames from node-0 to node-1 do not arrive (largest that crossed: 1500); check the uplink MTU of both nodes"
	tests := []struct {
		name   string
		modify func(*CreateInput)
		want   []want
	}{
		{name: "every path verified", modify: func(*CreateInput) {}},
		{name: "a failing path is dropped while another target is left, with a warning that steering excludes it", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-1 excluded from the targets: the migration path from node-0 fails (node-1: "+mtu,
			"migranet keeps the target pod off it")}},
		{name: "in warn mode the node is avoided, not excluded, and the warning says the scheduler may still pick it", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeWarn})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-1 avoided but not excluded (pathHealthy is in warn mode)",
			"may still place the target pod there: pin a healthy node with spec.addedNodeSelector")}},
		{name: "no warning for a failing path to a node that cannot take the target pod anyway", modify: func(in *CreateInput) {
			cordoned(in.Nodes[1])
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}},
		{name: "every otherwise feasible target behind a failing path", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2", failing("node-0", v1beta1.PathOneWay, 0)))
		}, want: []want{deny(pathRule, fieldVMIName, "no target with a healthy migration path from node-0: node-1: "+mtu,
			"; node-2: packets from node-2 do not reach node-0 while node-0's own probes arrive; check firewall rules")}},
		{name: "warn mode admits them with the warning", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeWarn})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500), failing("node-2", v1beta1.PathUnreachable, 0)), report("node-1"), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-1: "+mtu, "node-2: no probe from node-0 reaches node-2")}},
		{name: "off: failing paths are not judged", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeOff})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500), failing("node-2", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}},
		{name: "exempt users skip it", modify: func(in *CreateInput) {
			in.Policy = policy(nil, "alice")
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500), failing("node-2", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}},
		{name: "the only feasible target fails: pathHealthy refuses, not feasibleTarget", modify: func(in *CreateInput) {
			cordoned(in.Nodes[2])
			in.Paths = healthOf(report("node-0"), report("node-1", failing("node-0", v1beta1.PathUnreachable, 0)), report("node-2"))
		}, want: []want{deny(pathRule, fieldVMIName, "from node-0: node-1: no probe from node-1 reaches node-0")}},
		{name: "nothing feasible: feasibleTarget's denial, unchanged", modify: func(in *CreateInput) {
			cordoned(in.Nodes[1])
			cordoned(in.Nodes[2])
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: []want{deny(tgtRule, fieldVMIName, "0 of 3 nodes can take its target pod: 2 are cordoned, 1 is its source node node-0; uncordon a node")}},
		{name: "a stale target is admitted with a warning", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1"), report("node-2", checktest.Stale))
		}, want: []want{warn(pathRule, fieldVMIName, "admitted with 1 target whose migration path from node-0 is unverified: node-2: node-2's probe agent is silent (AgentSilent)")}},
		{name: "a target never reported", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-2: node-2's probe agent has not reported on kubevirt/"+testNAD)}},
		{name: "an agent that cannot probe", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1", checktest.Problem(v1beta1.ProbeNotAttached, "no migration0")), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-1: node-1's probe agent cannot probe (NotAttached: no migration0)")}},
		{name: "a target that joined after the source's last round started", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1", checktest.Joined(10*time.Second)), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "node-1: node-0 has not probed node-1 yet")}},
		{name: "a source that joined after a target's last round started", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", checktest.Joined(10*time.Second)), report("node-1"), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "admitted with 2 targets", "node-1: node-1 has not probed node-0 yet", "node-2: node-2 has not probed node-0 yet")}},
		{name: "the source's own results are stale", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", checktest.Stale), report("node-1"), report("node-2"))
		}, want: []want{warn(pathRule, fieldVMIName, "admitted without a verified migration path from node-0: node-0's probe agent is silent (AgentSilent)")}},
		{name: "a stale report's failures refuse nothing", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0"), report("node-1", checktest.Stale, failing("node-0", v1beta1.PathMTU, 0)), report("node-2", checktest.Stale, failing("node-0", v1beta1.PathMTU, 0)))
		}, want: []want{warn(pathRule, fieldVMIName, "admitted with 2 targets", "node-1's probe agent is silent (AgentSilent)")}},
		{name: "failing dropped, the other target stale", modify: func(in *CreateInput) {
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2", checktest.Stale))
		}, want: []want{warn(pathRule, fieldVMIName, "admitted with 1 target", "node-2: node-2's probe agent is silent (AgentSilent)")}},
		{name: "no probe agent reported: nothing to judge", modify: func(in *CreateInput) { in.Paths = healthOf() }},
		{name: "no health known", modify: func(in *CreateInput) { in.Paths = nil }},
		{name: "results of another network", modify: func(in *CreateInput) {
			r := report("node-0", failing("node-1", v1beta1.PathMTU, 0), failing("node-2", v1beta1.PathMTU, 0))
			r.Network = "kubevirt/vm-migration-network-old"
			in.Paths = health.Paths(r.Network, []*v1beta1.PathReport{r})
		}},
		{name: "no migration network", modify: func(in *CreateInput) {
			in.CurrentHash, in.Network = "", nil
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 0), failing("node-2", v1beta1.PathMTU, 0)))
		}},
		{name: "at most three pairs named", modify: func(in *CreateInput) {
			opts := []checktest.ReportOpt{}
			reports := []*v1beta1.PathReport{}
			for i := 1; i <= 5; i++ {
				name := fmt.Sprintf("node-%d", i)
				if i > 2 {
					in.Nodes = append(in.Nodes, node(name))
				}
				opts = append(opts, failing(name, v1beta1.PathUnreachable, 0))
				reports = append(reports, report(name))
			}
			in.Paths = healthOf(append(reports, report("node-0", opts...))...)
		}, want: []want{deny(pathRule, fieldVMIName, "node-1: ", "; node-3: ", "; and 2 more targets with a failing path")}},
		{name: "feasibleTarget off still drops the failing targets", modify: func(in *CreateInput) {
			in.Policy = policy(map[settings.Rule]settings.Mode{tgtRule: settings.ModeOff})
			in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500), failing("node-2", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
		}, want: []want{deny(pathRule, fieldVMIName, "node-1: "+mtu)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := pathCreate()
			tc.modify(&in)
			walked := EvaluateCreate(in)
			checkDecisions(t, walked, tc.want)
			in.index = newNodeIndex(in.Nodes)
			if d := gocmp.Diff(walked, EvaluateCreate(in)); d != "" {
				t.Errorf("with the node index (-walk +index):\n%s", d)
			}
		})
	}
}

// TestPathHealthyMessage pins one refusal.
func TestPathHealthyMessage(t *testing.T) {
	in := pathCreate()
	cordoned(in.Nodes[2])
	in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-2"))
	got := EvaluateCreate(in)
	want := []Decision{{Rule: pathRule, Deny: true, Field: fieldVMIName, Message: "no target with a healthy migration path from node-0: node-1: " +
		"9000-byte frames from node-0 to node-1 do not arrive (largest that crossed: 1500); check the uplink MTU of both nodes and of the switch ports between them" +
		" (kubectl get pathreports node-0 -o yaml)"}}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("decisions (-want +got):\n%s", d)
	}
}

// TestTargetSearchRunsOnce: feasibleTarget and pathHealthy share one search per evaluation.
// Fault caught: each rule running its own (the room classes learnt twice, the cost doubled).
func TestTargetSearchRunsOnce(t *testing.T) {
	in := pathCreate()
	in.feas = feasibility{}
	f := in.feasible()
	f.msg = "memoised"
	if got := in.feasible().msg; got != "memoised" {
		t.Errorf("a second search ran: %q", got)
	}
	if d := EvaluateCreate(in); len(d) != 0 {
		t.Errorf("EvaluateCreate reused a search of another evaluation: %+v", d)
	}
}

// TestTargetNodesPath: preflight's per-node path verdict.
func TestTargetNodesPath(t *testing.T) {
	in := pathCreate()
	in.Nodes = append(in.Nodes, node("node-3", cordoned))
	in.Paths = healthOf(report("node-0", failing("node-1", v1beta1.PathMTU, 1500)), report("node-1"), report("node-3"))
	mtu := "9000-byte frames from node-0 to node-1 do not arrive (largest that crossed: 1500); check the uplink MTU of both nodes and of the switch ports between them"
	verdicts := func() map[string]string {
		got := map[string]string{}
		for _, nv := range TargetNodes(&in) {
			got[nv.Node] = nv.Path
			if nv.Path == "" && strings.HasPrefix(nv.Reason, "excluded") {
				got[nv.Node] = nv.Reason
			}
		}
		return got
	}
	// Enforced: the node behind the failing path is no target (the steering excludes it).
	want := map[string]string{"node-0": "", "node-3": "",
		"node-1": "excluded: its migration path from node-0 fails: " + mtu,
		"node-2": "unverified: node-2's probe agent has not reported on kubevirt/" + testNAD}
	if d := gocmp.Diff(want, verdicts()); d != "" {
		t.Errorf("paths (-want +got):\n%s", d)
	}
	// Warn mode: still a target, its path failing.
	in.Policy = policy(map[settings.Rule]settings.Mode{pathRule: settings.ModeWarn})
	want["node-1"] = "failing: " + mtu
	if d := gocmp.Diff(want, verdicts()); d != "" {
		t.Errorf("paths in warn mode (-want +got):\n%s", d)
	}
	in.Paths = nil
	for _, nv := range TargetNodes(&in) {
		if nv.Path != "" {
			t.Errorf("%s: path %q without health data", nv.Node, nv.Path)
		}
	}
}

// worstCasePaths is worstCase with probe results for its 1,000 nodes: every one fresh, and a few
// failing pairs, none of them the source's.
func worstCasePaths() CreateInput {
	in := worstCase()
	reports := make([]*v1beta1.PathReport, len(in.Nodes))
	for i, n := range in.Nodes {
		reports[i] = report(n.Name)
	}
	reports[100].Failing = []v1beta1.PeerPath{{Node: "node-0200", Reason: v1beta1.PathMTU, Largest: 1500}}
	reports[300].Failing = []v1beta1.PeerPath{{Node: "node-0400", Reason: v1beta1.PathUnreachable}}
	reports[999].Failing = []v1beta1.PeerPath{{Node: "node-0500", Reason: v1beta1.PathOneWay}}
	in.Paths, in.Now = healthOf(reports...), checktest.Now
	return in
}

// BenchmarkEvaluateCreateWorstCasePaths is BenchmarkEvaluateCreateWorstCase judged with probe
// results for every node (all verified, a few failing pairs elsewhere): the paths must cost next to
// nothing and no allocation.
func BenchmarkEvaluateCreateWorstCasePaths(b *testing.B) {
	in := worstCasePaths()
	if got := EvaluateCreate(in); len(got) != 0 || !in.feasible().pathsOn {
		b.Fatalf("got %+v, want admitted with the paths judged", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := EvaluateCreate(in); len(got) != 0 {
			b.Fatalf("got %+v, want admitted", got)
		}
	}
}
