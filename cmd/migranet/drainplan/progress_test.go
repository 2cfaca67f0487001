package drainplan

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestTrack: each VMI's state in the drain against its plan. Faults caught, each seen to fail
// once: a VMI streaming by any migration state (not its current migration's UID); a VMI that
// waits for an external controller tracked as waiting instead of left.
func TestTrack(t *testing.T) {
	since := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	now := since.Add(30 * time.Second)
	plan := &Plan{Node: "n1", Total: 40, VMIs: []VMIPlan{
		{Namespace: "ns", Name: "moved", Verdict: Moves, Target: "n2", Expected: 12},
		{Namespace: "ns", Name: "elsewhere", Verdict: Moves, Target: "n2", Expected: 12},
		{Namespace: "ns", Name: "streams", Verdict: Moves, Target: "n3", Expected: 20},
		{Namespace: "ns", Name: "starts", Verdict: Moves, Target: "n3", Expected: 20},
		{Namespace: "ns", Name: "queued", Verdict: Moves, Target: "n3", Expected: 20},
		{Namespace: "ns", Name: "failed", Verdict: Moves, Target: "n2", Expected: 20},
		{Namespace: "ns", Name: "old-failure", Verdict: Moves, Target: "n2", Expected: 20},
		{Namespace: "ns", Name: "retried", Verdict: Moves, Target: "n2", Expected: 20},
		{Namespace: "ns", Name: "none", Verdict: Stops, Category: CatEvictionNone},
		{Namespace: "ns", Name: "pinned", Verdict: Blocks, Category: CatNodeSelector},
		{Namespace: "ns", Name: "external", Verdict: Waits, Category: CatExternal},
	}}
	running := func(name, node string) *kubevirtv1.VirtualMachineInstance {
		v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
		v.Status.Phase, v.Status.NodeName = kubevirtv1.Running, node
		return v
	}
	mig := func(name, vmi string, created time.Time, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) kubevirtv1.VirtualMachineInstanceMigration {
		m := kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("m-" + name), CreationTimestamp: metav1.NewTime(created)}}
		m.Spec.VMIName, m.Status.Phase = vmi, phase
		return m
	}
	vmis := map[string]*kubevirtv1.VirtualMachineInstance{
		"moved": running("moved", "n2"), "elsewhere": running("elsewhere", "n3"), "streams": running("streams", "n1"), "starts": running("starts", "n1"),
		"queued": running("queued", "n1"), "failed": running("failed", "n1"), "old-failure": running("old-failure", "n1"), "pinned": running("pinned", "n1"),
		"retried": running("retried", "n1"), "external": running("external", "n1"),
	}
	// The near miss of "streams": its migration state is its failed attempt's (another UID) while
	// the retry is still scheduled: starting, not streaming to the old attempt's target.
	vmis["retried"].Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m-r1", TargetNode: "n3", SourceNode: "n1",
		StartTimestamp: &metav1.Time{Time: since.Add(2 * time.Second)}, Failed: true}
	vmis["streams"].Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m-s", TargetNode: "n3", SourceNode: "n1",
		StartTimestamp: &metav1.Time{Time: now.Add(-5 * time.Second)}}
	vmis["failed"].Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m-f", Failed: true,
		FailureReason: "Live migration is not completed after 300 seconds and has been aborted"}
	migrations := []kubevirtv1.VirtualMachineInstanceMigration{
		mig("s", "streams", since.Add(2*time.Second), kubevirtv1.MigrationRunning),
		mig("t", "starts", since.Add(3*time.Second), kubevirtv1.MigrationScheduling),
		mig("f", "failed", since.Add(time.Second), kubevirtv1.MigrationFailed),
		mig("r1", "retried", since.Add(time.Second), kubevirtv1.MigrationFailed),
		mig("r2", "retried", since.Add(10*time.Second), kubevirtv1.MigrationScheduling),
		// Before the plan: not this drain's.
		mig("o", "old-failure", since.Add(-time.Hour), kubevirtv1.MigrationFailed),
	}
	m := NewMetrics("lab")
	if _, err := m.Parse(strings.NewReader(`kubevirt_vmi_migration_memory_transfer_rate_bytes{name="streams",namespace="ns",node="n1"} 3.3554432e+07` + "\n")); err != nil {
		t.Fatal(err)
	}
	pr := Track(plan, func(ns, name string) *kubevirtv1.VirtualMachineInstance { return vmis[name] }, migrations, m, since, now)
	want := map[string]string{"moved": StateDone + "@n2", "elsewhere": StateDone + "@n3", "streams": StateStreaming + "@n3", "starts": StateStarting + "@",
		"queued": StateWaiting + "@", "failed": StateFailed + "@", "old-failure": StateWaiting + "@", "none": StateStopped + "@", "pinned": StateLeft + "@",
		"retried": StateStarting + "@", "external": StateLeft + "@"}
	for _, r := range pr.Rows {
		if got := r.State + "@" + r.Node; got != want[r.Name] {
			t.Errorf("%s: %s, want %s", r.Name, got, want[r.Name])
		}
		switch r.Name {
		case "streams":
			if r.Throughput != 32<<20 || r.Elapsed != 5 {
				t.Errorf("streams: throughput %d elapsed %v", r.Throughput, r.Elapsed)
			}
		case "failed":
			if !strings.Contains(r.Why, "not completed after 300 seconds") || r.Attempts != 1 {
				t.Errorf("failed: %q attempts %d", r.Why, r.Attempts)
			}
		}
	}
	if pr.Finished {
		t.Error("finished while VMIs wait")
	}
	var b bytes.Buffer
	if err := pr.Print(&b, "table"); err != nil || !strings.Contains(b.String(), "not the planned target n2") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
	// Everything moved or stopped, the blocked one left: finished.
	for _, n := range []string{"streams", "starts", "queued", "failed", "old-failure", "retried"} {
		vmis[n] = running(n, "n2")
	}
	if pr := Track(plan, func(ns, name string) *kubevirtv1.VirtualMachineInstance { return vmis[name] }, migrations, m, since, now); !pr.Finished {
		t.Errorf("not finished: %+v", pr.Counts)
	}
}
