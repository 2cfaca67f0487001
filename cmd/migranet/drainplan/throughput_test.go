package drainplan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestThroughputsPath(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	f := func(src, dst string, mem int64, took time.Duration, ago int) Finished {
		return Finished{Source: src, Target: dst, Memory: mem, Stream: took, Setup: 2 * time.Second, Finish: time.Second, Ended: at.Add(-time.Duration(ago) * time.Minute)}
	}
	history := []Finished{f("n1", "n2", 512*mib, 16*time.Second, 1), f("n1", "n2", 512*mib, 8*time.Second, 2), f("n1", "n2", 512*mib, 16*time.Second, 3),
		f("n3", "n4", 256*mib, 4*time.Second, 4)}
	for _, tc := range []struct {
		name      string
		o         Options
		src, dst  string
		want      int64
		fromWords string
	}{
		{"the pair's median", Options{}, "n1", "n2", 32 * mib, "of the 3 finished migrations on n1 -> n2"},
		{"another pair to the same target", Options{}, "n5", "n2", 32 * mib, "to n2 (none on this path)"},
		{"from the same source", Options{}, "n1", "n9", 32 * mib, "from n1 (none to n9)"},
		{"the cluster's", Options{}, "n7", "n9", 48 * mib, "the cluster's 4 finished migrations"},
		{"capped by bandwidthPerMigration", Options{Bandwidth: 16 * mib}, "n1", "n2", 16 * mib, "bandwidthPerMigration 16.0 MiB/s (KubeVirt CR), below the measured 32.0 MiB/s"},
		// The near miss: a cap above what was measured changes nothing.
		{"a cap above the measured", Options{Bandwidth: 40 * mib}, "n1", "n2", 32 * mib, "on n1 -> n2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewThroughputs(history, tc.o).Path(tc.src, tc.dst)
			if m.BytesPerSecond != tc.want || !strings.Contains(m.From, tc.fromWords) {
				t.Errorf("Path = %s (%s), want %s (%s)", Rate(m.BytesPerSecond), m.From, Rate(tc.want), tc.fromWords)
			}
		})
	}
	if m := NewThroughputs(nil, Options{Bandwidth: 64 * mib}).Path("a", "b"); m.BytesPerSecond != 64*mib || !strings.HasPrefix(m.From, "bandwidthPerMigration") {
		t.Errorf("nothing measured, a bandwidth: %+v", m)
	}
	if m := NewThroughputs(nil, Options{}).Path("a", "b"); m.BytesPerSecond != DefaultThroughput || !strings.HasPrefix(m.From, "assumed") {
		t.Errorf("nothing measured, no bandwidth: %+v", m)
	}
	setup, finish, from := NewThroughputs(history, Options{}).Overheads()
	if setup != 2*time.Second || finish != time.Second || !strings.Contains(from, "median of 4 finished migrations") {
		t.Errorf("overheads %s %s %q", setup, finish, from)
	}
	if setup, _, from := NewThroughputs(nil, Options{}).Overheads(); setup != DefaultSetup || !strings.HasPrefix(from, "assumed") {
		t.Errorf("no history: %s %q", setup, from)
	}
}

func TestFinishedFrom(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	m := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
	m.Status.Phase = kubevirtv1.MigrationSucceeded
	m.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2",
		StartTimestamp: &metav1.Time{Time: t0.Add(3 * time.Second)}, EndTimestamp: &metav1.Time{Time: t0.Add(19 * time.Second)}}
	m.Status.PhaseTransitionTimestamps = []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
		{Phase: kubevirtv1.MigrationSucceeded, PhaseTransitionTimestamp: metav1.NewTime(t0.Add(20 * time.Second))}}
	f, ok := FinishedFrom(m, vmi, 0)
	if !ok || f.Stream != 16*time.Second || f.Setup != 3*time.Second || f.Finish != time.Second || f.Memory != 512*mib {
		t.Errorf("FinishedFrom = %+v, %v", f, ok)
	}
	if _, ok := FinishedFrom(m, nil, 0); ok {
		t.Error("a migration whose VMI is gone tells no memory")
	}
	m.Status.Phase = kubevirtv1.MigrationFailed
	if _, ok := FinishedFrom(m, vmi, 0); ok {
		t.Error("a failed migration measured a path")
	}
}
