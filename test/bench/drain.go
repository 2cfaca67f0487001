package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/test/sim"
)

const (
	drRuns      = 5
	drNamespace = "drain"
	drNode      = "node-1"
	// drBandwidth is the KubeVirt CR's bandwidthPerMigration for the run: the streams are paced
	// to it, so a migration takes seconds, as on a real link.
	drBandwidth = "32Mi"
	drGoal      = 0.25
)

// drVMs are the drained node's VMIs: memory and the rate the guest dirties it (the stand-in
// streams exactly that, and reports it as virt-handler's kubevirt_vmi_dirty_rate_bytes_per_second).
var drVMs = []struct {
	name, memory, dirty string
}{
	{"small-idle", "256Mi", "0"},
	{"mid-light", "384Mi", "2Mi"},
	{"mid-busy", "512Mi", "8Mi"},
	{"large-light", "640Mi", "4Mi"},
	{"large-busy", "768Mi", "12Mi"},
}

// benchDrain measures `migranet preflight --drain` against the drain that follows, on real node
// networks with KubeVirt's own virt-api and virt-controller, kubectl drain and real streams: each
// run starts drVMs on node-1, asks the built binary for the plan, drains node-1 with kubectl and
// compares the plan's total with the drain's real time. Before the runs, three migrations of a
// calibration VMI give the plan the throughput and overheads of real migrations to read.
func benchDrain() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-drain-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, "cluster")})
	if err != nil {
		return nil, err
	}
	defer e.Stop()
	if e.NodeNetworks == nil {
		return []string{"bench drain: plan vs drain: not measured (no real node networks)"}, nil
	}
	if err := drSetup(ctx, e); err != nil {
		return nil, err
	}
	var errs []float64
	var lines []string
	for i := range drRuns {
		predicted, real, detail, err := drRun(ctx, e, i)
		if err != nil {
			return lines, fmt.Errorf("run %d: %w", i+1, err)
		}
		rel := (predicted.Seconds() - real.Seconds()) / real.Seconds()
		errs = append(errs, rel)
		lines = append(lines, fmt.Sprintf("bench drain: run %d: predicted %.1f s, drain took %.1f s, error %+.0f%% (%s)", i+1, predicted.Seconds(), real.Seconds(), rel*100, detail))
	}
	worst := slices.MaxFunc(errs, func(a, b float64) int { return cmpAbs(a, b) })
	sorted := slices.Clone(errs)
	slices.Sort(sorted)
	verdict := "within"
	if abs(worst) > drGoal {
		verdict = "MISSED"
	}
	lines = append(lines, fmt.Sprintf("bench drain: %d VMIs (256-768 MiB, dirty 0-12 MiB/s, bandwidthPerMigration %s), %d runs: plan error min %+.0f%% median %+.0f%% max %+.0f%%; goal |error| <= %.0f%%: %s",
		len(drVMs), drBandwidth, drRuns, sorted[0]*100, sorted[len(sorted)/2]*100, sorted[len(sorted)-1]*100, drGoal*100, verdict))
	if verdict == "MISSED" {
		return lines, fmt.Errorf("the plan missed the drain's time by %+.0f%%", worst*100)
	}
	return lines, nil
}

func abs(f float64) float64 { return max(f, -f) }

func cmpAbs(a, b float64) int {
	switch {
	case abs(a) < abs(b):
		return -1
	case abs(a) > abs(b):
		return 1
	}
	return 0
}

// drSetup configures the migration network and bandwidthPerMigration, waits for proven paths,
// and runs the calibration migrations.
func drSetup(ctx context.Context, e *env.Env) error {
	kv, err := e.KubeVirt(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(kv.DeepCopy())
	if kv.Spec.Configuration.MigrationConfiguration == nil {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{}
	}
	bw := resource.MustParse(drBandwidth)
	kv.Spec.Configuration.MigrationConfiguration.BandwidthPerMigration = &bw
	if err := e.Client.Patch(ctx, kv, patch); err != nil {
		return err
	}
	if err := setValue(ctx, e, v1beta1.MigrationNetwork, abJumbo); err != nil {
		return err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta(drNamespace)}); err != nil {
		return err
	}
	if err := until(ctx, 3*time.Minute, func() (bool, error) { return healthy(ctx, e) }); err != nil {
		return fmt.Errorf("the paths never turned Healthy: %w", err)
	}
	if err := e.WaitKubeVirtAvailable(ctx, 2*time.Minute); err != nil {
		return err
	}
	// Calibration: a 512 MiB guest dirtying 4 MiB/s, migrated node-1 -> node-2 -> node-1 -> node-3.
	cal := drVMI("calibration", "512Mi", "4Mi")
	if err := drStart(ctx, e, cal); err != nil {
		return err
	}
	for i, to := range []string{"node-2", "node-1", "node-3"} {
		vmim := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: fmt.Sprintf("calibration-%d", i)},
			Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: cal.Name, AddedNodeSelector: map[string]string{corev1.LabelHostname: to}}}
		if err := until(ctx, time.Minute, func() (bool, error) { return e.Client.Create(ctx, vmim) == nil, nil }); err != nil {
			return fmt.Errorf("calibration migration to %s never admitted: %w", to, err)
		}
		if err := until(ctx, 2*time.Minute, func() (bool, error) {
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(vmim), vmim)
			if vmim.Status.Phase == kubevirtv1.MigrationFailed {
				return false, errors.New("calibration migration failed")
			}
			return err == nil && vmim.Status.Phase == kubevirtv1.MigrationSucceeded, client.IgnoreNotFound(err)
		}); err != nil {
			return err
		}
	}
	return nil
}

// drVMI is a VMI that prefers node-1, evictionStrategy LiveMigrate, of memory dirtied at dirty.
func drVMI(name, memory, dirty string) *kubevirtv1.VirtualMachineInstance {
	vmi := framework.VMI(drNamespace, name, drNode, nil)
	vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse(memory)
	live := kubevirtv1.EvictionStrategyLiveMigrate
	vmi.Spec.EvictionStrategy = &live
	vmi.Annotations = map[string]string{sim.HandlerDirtyRateAnnotation: dirty}
	return vmi
}

// drStart creates vmi and waits until it runs on node-1.
func drStart(ctx context.Context, e *env.Env, vmi *kubevirtv1.VirtualMachineInstance) error {
	if err := e.Client.Create(ctx, vmi); err != nil {
		return err
	}
	return until(ctx, 2*time.Minute, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi)
		if err == nil && vmi.Status.Phase == kubevirtv1.Running && vmi.Status.NodeName != drNode {
			return false, fmt.Errorf("VMI %s runs on %s, not %s", vmi.Name, vmi.Status.NodeName, drNode)
		}
		return err == nil && vmi.Status.Phase == kubevirtv1.Running, client.IgnoreNotFound(err)
	})
}

// drRun starts the VMIs, plans, drains, compares; then uncordons and deletes them.
func drRun(ctx context.Context, e *env.Env, run int) (predicted, real time.Duration, detail string, err error) {
	var vmis []*kubevirtv1.VirtualMachineInstance
	defer func() {
		_, _, _ = kubectl(e, "uncordon", drNode)
		for _, v := range vmis {
			_ = e.Client.Delete(ctx, v)
		}
		_ = until(ctx, 2*time.Minute, func() (bool, error) {
			for _, v := range vmis {
				if e.Client.Get(ctx, client.ObjectKeyFromObject(v), &kubevirtv1.VirtualMachineInstance{}) == nil {
					return false, nil
				}
			}
			return true, nil
		})
	}()
	for _, vm := range drVMs {
		v := drVMI(fmt.Sprintf("%s-%d", vm.name, run), vm.memory, vm.dirty)
		vmis = append(vmis, v)
		if err := drStart(ctx, e, v); err != nil {
			return 0, 0, "", err
		}
	}
	cmd := exec.CommandContext(ctx, e.Manager.Binary, "preflight", "--kubeconfig", e.Kubeconfig, "--drain", drNode, "-o", "json",
		"--metrics", e.HandlerMetricsURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return 0, 0, "", fmt.Errorf("preflight --drain: %v: %s", err, errOut.String())
	}
	if run == 0 {
		table, _ := exec.CommandContext(ctx, e.Manager.Binary, "preflight", "--kubeconfig", e.Kubeconfig, "--drain", drNode,
			"--metrics", e.HandlerMetricsURL).Output()
		fmt.Fprintf(os.Stderr, "bench drain: the plan of run 1:\n%s\n", table)
	}
	var p drainplan.Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		return 0, 0, "", err
	}
	if !p.Completes || len(p.VMIs) != len(drVMs) {
		return 0, 0, "", fmt.Errorf("the plan says the drain would not complete: %s", out.String())
	}
	start := time.Now()
	if _, stderr, err := kubectl(e, "drain", drNode, "--pod-selector", kubevirtv1.AppLabel+"=virt-launcher",
		"--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout", "10m"); err != nil {
		return 0, 0, "", fmt.Errorf("kubectl drain: %v: %s", err, stderr)
	}
	real = time.Since(start)
	var targets []string
	for _, v := range p.VMIs {
		got := &kubevirtv1.VirtualMachineInstance{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: v.Name}, got); err != nil {
			return 0, 0, "", err
		}
		mark := ""
		if got.Status.NodeName != v.Target {
			mark = "!"
		}
		targets = append(targets, fmt.Sprintf("%.0fs%s", v.Expected, mark))
	}
	detail = fmt.Sprintf("per VMI %s; spread over %d orders %.1f-%.1f s; %s", strings.Join(targets, " "), p.Orders, p.Min, p.Max, p.Overheads)
	return time.Duration(p.Total * float64(time.Second)), real, detail, nil
}

// kubectl runs the real kubectl on e's cluster.
func kubectl(e *env.Env, args ...string) (string, string, error) {
	cmd := exec.Command(e.Binaries.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}
