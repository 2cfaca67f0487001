package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

const (
	// abProgressTimeout is the KubeVirt CR's migrations.progressTimeout for the run, short so the
	// baseline ends in seconds.
	abProgressTimeout = 15
	abTrials          = 3
	abJumbo           = `{"clusterNetwork":"migration","vlan":100,"range":"192.168.100.0/24","exclude":["192.168.100.1/32"],"mtu":9000}`
)

// benchAbort measures the runningPathHealthy rule: the cost of DecideAbort against Pair (the
// path lookup every admission makes) on the same 1,000-node health, and, on real node networks
// with KubeVirt's own virt-controller, the time from a path break (the target's uplink narrowed
// below the network's MTU mid-stream) to the migration's end, migranet aborting it (rule at
// enforce), against the same break with the rule off, where only KubeVirt's progress timeout
// (15 s for the run) ends it.
func benchAbort() ([]string, error) {
	lines := []string{decideCost()}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-abort-")
	if err != nil {
		return lines, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster")})
	if err != nil {
		return lines, err
	}
	defer e.Stop()
	if e.NodeNetworks == nil {
		return append(lines, "bench abort: path break -> end: not measured (no real node networks)"), nil
	}
	if err := abSetup(ctx, e); err != nil {
		return lines, err
	}
	var enforce []time.Duration
	for i := range abTrials {
		d, how, err := abTrial(ctx, e, fmt.Sprintf("enforce-%d", i), true)
		if err != nil {
			return lines, err
		}
		if how != "aborted" {
			return lines, fmt.Errorf("trial %d: the migration %s, not aborted", i, how)
		}
		enforce = append(enforce, d)
	}
	if err := setValue(ctx, e, v1beta1.MigrationPolicy, `{"rules":{"runningPathHealthy":"off"}}`); err != nil {
		return lines, err
	}
	// Held as the enforce trials are: the stream then ends only by the break (the virt-handler
	// stand-in streams for real, and KubeVirt's monitor fails a stream that stops progressing).
	base, how, err := abTrial(ctx, e, "off", true)
	if err != nil {
		return lines, err
	}
	slices.Sort(enforce)
	line := fmt.Sprintf("bench abort: path break -> migration ended, %d trials, probe round 4 s: aborted by migranet min %.1f s median %.1f s max %.1f s",
		abTrials, enforce[0].Seconds(), enforce[len(enforce)/2].Seconds(), enforce[len(enforce)-1].Seconds())
	if how == "failed" {
		line += fmt.Sprintf("; rule off, KubeVirt's progressTimeout %d s: %.1f s; ratio %.2f", abProgressTimeout, base.Seconds(),
			enforce[len(enforce)/2].Seconds()/base.Seconds())
	} else {
		line += fmt.Sprintf("; rule off: the migration %s after %.1f s (the virt-handler stand-in does not stream it: no progress-timeout baseline in this run), ratio to the configured progressTimeout %d s %.2f",
			how, base.Seconds(), abProgressTimeout, enforce[len(enforce)/2].Seconds()/abProgressTimeout)
	}
	return append(lines, line), nil
}

// decideCost is DecideAbort's cost per streaming migration against Pair's on the same health.
func decideCost() string {
	h, vmi, now := abHealth()
	ms := vmi.Status.MigrationState
	decide := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			health.DecideAbort(vmi, h, settings.ModeEnforce, now)
		}
	})
	pair := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.Pair(ms.SourceNode, ms.TargetNode, now)
		}
	})
	return fmt.Sprintf("bench abort: DecideAbort per streaming migration (1,000-node health, its pair failing) %d ns/op %d allocs/op; Pair on the same health %d ns/op; ratio %.2f",
		decide.NsPerOp(), decide.AllocsPerOp(), pair.NsPerOp(), float64(decide.NsPerOp())/float64(max(pair.NsPerOp(), 1)))
}

// abHealth is 1,000 nodes' fresh reports, node-0's listing node-1 (MTU), and a migration from
// node-0 to node-1 that started before that round (its first failing probe came after the start).
func abHealth() (*health.PathHealth, *kubevirtv1.VirtualMachineInstance, time.Time) {
	const network = "kubevirt/n"
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var reports []*v1beta1.PathReport
	for i := range 1000 {
		r := &v1beta1.PathReport{Network: network, IntervalSeconds: 20, MTU: 9000, Since: metav1.NewMicroTime(t0),
			LastRound: &v1beta1.ProbeRound{Started: metav1.NewMicroTime(t0.Add(time.Minute)), Completed: metav1.NewMicroTime(t0.Add(61 * time.Second))}}
		r.Name = "node-" + strconv.Itoa(i)
		if i == 0 {
			found := metav1.NewMicroTime(t0.Add(time.Minute + 5*time.Second))
			r.Failing = []v1beta1.PeerPath{{Node: "node-1", Reason: v1beta1.PathMTU, Largest: 1500, Since: &found, AfterCheck: true}}
		}
		reports = append(reports, r)
	}
	start := metav1.NewTime(t0.Add(30 * time.Second))
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-0", TargetNode: "node-1",
		StartTimestamp: &start, Mode: kubevirtv1.MigrationPreCopy}
	return health.Paths(network, reports), vmi, t0.Add(62 * time.Second)
}

// abSetup sets the progress timeout and the jumbo network, and waits until the paths are proven.
func abSetup(ctx context.Context, e *env.Env) error {
	kv, err := e.KubeVirt(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(kv.DeepCopy())
	if kv.Spec.Configuration.MigrationConfiguration == nil {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{}
	}
	kv.Spec.Configuration.MigrationConfiguration.ProgressTimeout = ptr(int64(abProgressTimeout))
	if err := e.Client.Patch(ctx, kv, patch); err != nil {
		return err
	}
	if err := setValue(ctx, e, v1beta1.MigrationNetwork, abJumbo); err != nil {
		return err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta("abort")}); err != nil {
		return err
	}
	if err := until(ctx, 3*time.Minute, func() (bool, error) { return healthy(ctx, e) }); err != nil {
		return fmt.Errorf("the paths never turned Healthy: %w", err)
	}
	return e.WaitKubeVirtAvailable(ctx, 2*time.Minute)
}

// abTrial starts a migration of a new VMI from node-1 to node-2 (held when held), narrows node-2's
// uplink to 1500 once it streams, and returns how long after the narrowing it ended and how
// ("aborted", "failed", "succeeded"); it repairs the uplink and waits for healthy paths after.
func abTrial(ctx context.Context, e *env.Env, name string, held bool) (time.Duration, string, error) {
	vmi := framework.VMI("abort", "vm-"+name, "node-1", nil)
	if err := e.Client.Create(ctx, vmi); err != nil {
		return 0, "", err
	}
	if err := until(ctx, time.Minute, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)
		return err == nil && vmi.Status.Phase == kubevirtv1.Running, client.IgnoreNotFound(err)
	}); err != nil {
		return 0, "", fmt.Errorf("VMI %s never ran: %w", vmi.Name, err)
	}
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "abort", Name: "m-" + name},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name, AddedNodeSelector: map[string]string{corev1.LabelHostname: "node-2"}}}
	if held {
		vmim.Annotations = map[string]string{sim.HandlerHoldAnnotation: "true"}
	}
	if err := until(ctx, time.Minute, func() (bool, error) { return e.Client.Create(ctx, vmim) == nil, nil }); err != nil {
		return 0, "", fmt.Errorf("migration %s never admitted: %w", vmim.Name, err)
	}
	if err := until(ctx, time.Minute, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)
		ms := vmi.Status.MigrationState
		return err == nil && ms != nil && ms.MigrationUID == vmim.UID && (ms.TargetNodeDomainDetected || ms.Completed || ms.Failed), err
	}); err != nil {
		return 0, "", fmt.Errorf("migration %s never streamed: %w", vmim.Name, err)
	}
	broke := time.Now()
	if err := uplink(ctx, e, "node-2", 1500); err != nil {
		return 0, "", err
	}
	how := ""
	if err := until(ctx, 4*abProgressTimeout*time.Second, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)
		ms := vmi.Status.MigrationState
		switch {
		case err != nil:
			return false, err
		case ms.AbortRequested:
			how = "aborted"
		case ms.Failed:
			how = "failed"
		case ms.Completed:
			how = "succeeded"
		}
		return how != "", nil
	}); err != nil {
		return 0, "", fmt.Errorf("migration %s did not end within %d s of the break: %w", vmim.Name, 4*abProgressTimeout, err)
	}
	took := time.Since(broke)
	_ = e.Client.Delete(ctx, vmim)
	if err := uplink(ctx, e, "node-2", cluster.DefaultUplinkMTU); err != nil {
		return 0, "", err
	}
	return took, how, until(ctx, 2*time.Minute, func() (bool, error) { return healthy(ctx, e) })
}

// uplink sets node's uplink MTU (the node annotation the real node networks follow).
func uplink(ctx context.Context, e *env.Env, node string, mtu int) error {
	n := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations[cluster.UplinkMTUAnnotationPrefix+cluster.DefaultClusterNetwork] = strconv.Itoa(mtu)
	return e.Client.Patch(ctx, n, patch)
}

// healthy reports whether the migration network's Healthy condition is True.
func healthy(ctx context.Context, e *env.Env) (bool, error) {
	s := &v1beta1.Setting{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
		return false, err
	}
	return meta.IsStatusConditionTrue(s.Status.Conditions, v1beta1.ConditionHealthy), nil
}

// setValue sets a migranet Setting's value.
func setValue(ctx context.Context, e *env.Env, name, value string) error {
	return framework.PatchSetting(ctx, e.Client, name, value)
}

// until polls cond every 100 ms until it holds, fails, or timeout passes.
func until(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ptr[T any](v T) *T { return &v }
