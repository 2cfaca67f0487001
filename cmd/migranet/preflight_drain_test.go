package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
	"github.com/migranet/migranet/webhook/migrationcheck/checktest"
)

// report is node's fresh PathReport now (the fixtures' are fixed in time), failing towards peers.
func report(node string, failing ...string) *v1beta1.PathReport {
	now := time.Now()
	r := &v1beta1.PathReport{ObjectMeta: metav1.ObjectMeta{Name: node}, Network: checktest.PathNet, MTU: 9000, IntervalSeconds: 20,
		Since:     metav1.NewMicroTime(now.Add(-time.Hour)),
		LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(now.Add(-10 * time.Second)), Completed: metav1.NewMicroTime(now.Add(-5 * time.Second))}}
	for _, p := range failing {
		r.Failing = append(r.Failing, v1beta1.PeerPath{Node: p, Reason: "Unreachable"})
	}
	return r
}

// TestPlanVMIPaths plans one evacuable VMI on n1 with targets n2 and n3 under path health, as the
// drain's migration would be judged: admission (pathHealthy), the steering and the scheduler's
// choice. The near miss: a target behind an unverified path still moves the VMI; behind failing
// paths only, it blocks.
func TestPlanVMIPaths(t *testing.T) {
	live := kubevirtv1.EvictionStrategyLiveMigrate
	vmi := checktest.VMI("n1", nil)
	vmi.Spec.EvictionStrategy = &live
	vmi.Status.Phase = kubevirtv1.Running
	vmi.Status.Conditions = append(vmi.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue})
	for _, tc := range []struct {
		name     string
		reports  []*v1beta1.PathReport
		verdict  string
		target   string
		path     string
		category string
		budget   *settings.Budget
		capped   string // the throughput's origin begins so (budget rows)
	}{
		{"n3 behind a failing path, n2 verified", []*v1beta1.PathReport{report("n1", "n3"), report("n2"), report("n3")}, drainplan.Moves, "n2", "verified", "", nil, ""},
		{"n3 behind a failing path, n2 unverified (never probed)", []*v1beta1.PathReport{report("n1", "n3"), report("n3")}, drainplan.Moves, "n2", "unverified: ", "", nil, ""},
		{"both behind failing paths", []*v1beta1.PathReport{report("n1", "n2", "n3"), report("n2"), report("n3")}, drainplan.Blocks, "", "", drainplan.CatPathsFailing, nil, ""},
		{"a budget of 100Mi on every node: the drained node's shared by its 2 slots", []*v1beta1.PathReport{report("n1", "n3"), report("n2"), report("n3")}, drainplan.Moves, "n2", "verified", "",
			&settings.Budget{Bandwidth: resource.MustParse("100Mi")}, "n1's budget 100.0 MiB/s shared by 2 migrations"},
		{"near miss: the drained node's override of 4Gi (nic=100g): the target's 100Mi binds", []*v1beta1.PathReport{report("n1", "n3"), report("n2"), report("n3")}, drainplan.Moves, "n2", "verified", "",
			&settings.Budget{Bandwidth: resource.MustParse("100Mi"), Nodes: []settings.BudgetOverride{{Selector: map[string]string{"nic": "100g"}, Bandwidth: ptr(resource.MustParse("4Gi"))}}}, "n2's budget 100.0 MiB/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &drainCluster{node: checktest.Node("n1"), vmis: []kubevirtv1.VirtualMachineInstance{*vmi}, kubevirt: checktest.ReadyKubeVirt(),
				metrics: drainplan.NewMetrics("none")}
			st := &planState{APIState: &migrationcheck.APIState{KubeVirtNamespace: "kubevirt", Snapshot: checktest.ReadySnapshot()}, d: d,
				nodes:    &migrationcheck.NodeSet{Nodes: []*corev1.Node{checktest.Node("n1", checktest.WithLabels("nic", "100g")), checktest.Node("n2"), checktest.Node("n3")}},
				settings: &migrationcheck.SettingsView{Hash: checktest.Hash, Policy: &settings.MigrationPolicy{Budget: tc.budget}}, paths: health.Paths(checktest.PathNet, tc.reports)}
			opts := drainplan.OptionsFrom(d.kubevirt)
			v, pod := planVMI(context.Background(), st, d, &d.vmis[0], nil, "", drainplan.NewThroughputs(nil, opts), opts, st.budget(d.kubevirt), 2)
			if tc.capped != "" && (v.Throughput == nil || !strings.HasPrefix(v.Throughput.From, tc.capped)) {
				t.Errorf("throughput %+v, want it from %q", v.Throughput, tc.capped)
			}
			if v.Verdict != tc.verdict || v.Target != tc.target || !strings.HasPrefix(v.Path, tc.path) || v.Category != tc.category {
				t.Fatalf("plan %+v\nwant %s to %q, path %q, category %q", v, tc.verdict, tc.target, tc.path, tc.category)
			}
			if (pod != nil) != (tc.verdict == drainplan.Moves) || pod != nil && pod.Spec.NodeName != tc.target {
				t.Errorf("placed pod %v", pod)
			}
		})
	}
}

func TestUnknownNode(t *testing.T) {
	for _, tc := range []struct{ node, want string }{
		{"node-l", "--drain node-l: no such node (did you mean node-1?); the nodes are node-1, node-2, node-3 (kubectl get nodes)"},
		{"worker", "--drain worker: no such node; the nodes are node-1, node-2, node-3 (kubectl get nodes)"},
	} {
		if got := unknownNode(tc.node, []string{"node-2", "node-1", "node-3"}); got != tc.want {
			t.Errorf("unknownNode(%s) = %q, want %q", tc.node, got, tc.want)
		}
	}
}

func TestParseDrainFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--drain", "node-1"}, ""},
		{[]string{"--drain", "node-1", "-w", "-o", "json", "--metrics", "http://127.0.0.1:9/metrics"}, ""},
		{[]string{"--drain", "node-1", "vm-0"}, `unexpected argument "vm-0": --drain node-1 plans every VMI on the node`},
		{[]string{"-w", "vm-0"}, "-w follows a drain: use it with --drain NODE"},
		{[]string{"--drain", "Node_1"}, `--drain "Node_1" is not a valid node name`},
		{[]string{"--drain", "node-1", "--target-selector", "a=b"}, "--target-selector is a migration's spec.addedNodeSelector"},
		{[]string{"--drain", "node-1", "--metrics", "prometheus"}, `--metrics "prometheus": want virt-handler, none, or an http(s):// URL`},
	} {
		_, err := parsePreflightFlags(tc.args)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
}

// TestReadDrainClusterKubeVirtNamespace: the plan reads the KubeVirt CR (its limits and eviction
// strategy) from --kubevirt-namespace only. The near miss: a second KubeVirt CR in the default
// namespace (a leftover) must not be read when another namespace is asked for. Faults caught,
// each seen to fail once: the CR listed in every namespace (the leftover's limits read); no CR
// in the namespace planned with KubeVirt's defaults instead of an error naming the flag.
func TestReadDrainClusterKubeVirtNamespace(t *testing.T) {
	kv := func(ns string, outbound uint32) *kubevirtv1.KubeVirt {
		k := checktest.ReadyKubeVirt()
		k.Namespace = ns
		k.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{ParallelOutboundMigrationsPerNode: &outbound}
		return k
	}
	leftover := kv("kubevirt", 4)
	leftover.Name = "a-leftover" // first by name among CRs alike in age: the one read across namespaces
	vmi := checktest.VMI("n1", nil)
	vmi.Status.Phase = kubevirtv1.Running
	for _, tc := range []struct {
		name     string
		crs      []*kubevirtv1.KubeVirt
		asked    string
		outbound uint32
		err      string
	}{
		{"Harvester's namespace", []*kubevirtv1.KubeVirt{kv("harvester-system", 1)}, "harvester-system", 1, ""},
		{"a leftover CR in the default namespace is not read", []*kubevirtv1.KubeVirt{leftover, kv("harvester-system", 1)}, "harvester-system", 1, ""},
		{"the default namespace without a CR", []*kubevirtv1.KubeVirt{kv("harvester-system", 1)}, "kubevirt",
			0, "--kubevirt-namespace kubevirt: no KubeVirt CR in namespace kubevirt, so the drain's limits and eviction strategy cannot be read; pass the namespace KubeVirt runs in (harvester-system on Harvester"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeReader(t, vmi.DeepCopy(), []*corev1.Node{checktest.Node("n1"), checktest.Node("n2")}, nil, nil)
			for _, k := range tc.crs {
				if err := c.Create(context.Background(), k); err != nil {
					t.Fatal(err)
				}
			}
			d, err := readDrainCluster(context.Background(), c, nil, tc.asked, "n1", metricsNone)
			if tc.err != "" {
				var usage usageError
				if !errors.As(err, &usage) || !strings.Contains(usage.msg, tc.err) {
					t.Fatalf("error %v, want a usage error %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.kubevirt.Namespace != tc.asked || *d.kubevirt.Spec.Configuration.MigrationConfiguration.ParallelOutboundMigrationsPerNode != tc.outbound {
				t.Errorf("read the KubeVirt CR %s/%s (outbound %d), want the one in %s (outbound %d)", d.kubevirt.Namespace, d.kubevirt.Name,
					*d.kubevirt.Spec.Configuration.MigrationConfiguration.ParallelOutboundMigrationsPerNode, tc.asked, tc.outbound)
			}
		})
	}
}
