package settings

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings/v1beta1"
)

// streaming is vmi's migration from source to target, started at start in mode.
func streaming(source, target string, start time.Time, mode kubevirtv1.MigrationMode, edit ...func(*kubevirtv1.VirtualMachineInstanceMigrationState)) *kubevirtv1.VirtualMachineInstance {
	ts := metav1.NewTime(start)
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}}
	vmi.Status.NodeName = source
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		SourceNode: source, TargetNode: target, StartTimestamp: &ts, Mode: mode, MigrationUID: "uid-1",
	}
	for _, e := range edit {
		e(vmi.Status.MigrationState)
	}
	return vmi
}

// Faults caught (each injected once into DecideAbort and seen to fail this table): the round's
// start not compared with the migration's ("a round from before the migration started"), a fault
// of the source with any node counted ("source and another node"), the reverse MTU direction
// counted, post-copy judged, the mode ignored (warn aborting), staleness ignored, an ended
// migration judged.
func TestDecideAbort(t *testing.T) {
	const net = "kubevirt/vm-migration-network-abc"
	start := t0.Add(30 * time.Second) // the migration starts streaming
	after := start.Add(5 * time.Second)
	now := after.Add(2 * time.Second)
	mtu := func(peer string) v1beta1.PeerPath {
		return v1beta1.PeerPath{Node: peer, Reason: v1beta1.PathMTU, Largest: 1500}
	}
	unreach := func(peer string) v1beta1.PeerPath {
		return v1beta1.PeerPath{Node: peer, Reason: v1beta1.PathUnreachable}
	}
	healthy := []*v1beta1.PathReport{report("n1", net, t0, after), report("n2", net, t0, after), report("n3", net, t0, after)}
	with := func(node string, round time.Time, failing ...v1beta1.PeerPath) []*v1beta1.PathReport {
		out := []*v1beta1.PathReport{}
		for _, r := range healthy {
			if r.Name == node {
				r = report(node, net, t0, round, failing...)
			}
			out = append(out, r)
		}
		return out
	}
	tests := []struct {
		name    string
		vmi     *kubevirtv1.VirtualMachineInstance
		reports []*v1beta1.PathReport
		mode    Mode
		now     time.Time
		want    AbortAction
		msg     string // substring of the decision's message
	}{
		{"source's own round finds its path to the target failing (MTU): aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), ModeEnforce, now, AbortDelete,
			"migration path n1 -> n2 failed while the migration streamed: 9000-byte frames from n1 to n2 do not arrive (largest that crossed: 1500)"},
		{"mode not yet written (started a moment ago): judged as pre-copy",
			streaming("n1", "n2", start, ""), with("n1", after, unreach("n2")), ModeEnforce, now, AbortDelete, "no probe from n1 reaches n2"},
		{"Paused (the guest suspended to converge): aborted like pre-copy",
			streaming("n1", "n2", start, kubevirtv1.MigrationPaused), with("n1", after, mtu("n2")), ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"the target's report: nothing it sends reaches the source (acknowledgements lost): aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, unreach("n1")), ModeEnforce, now, AbortDelete, "no probe from n2 reaches n1"},
		{"near miss: only the reverse direction drops full-size frames (the bulk flows n1 -> n2): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, mtu("n1")), ModeEnforce, now, AbortNone, "no failing path between n1 and n2"},
		{"near miss: the same pair migrating the other way (n2 -> n1): n1's MTU fault is the reverse direction now",
			streaming("n2", "n1", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "no failing path between n2 and n1"},
		{"near miss: the source's path to another node fails",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n3")), ModeEnforce, now, AbortNone, "no failing path"},
		{"near miss: the target's path to another node fails",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, unreach("n3")), ModeEnforce, now, AbortNone, "no failing path"},
		{"near miss: a round from before the migration started (the failure was not seen while it streams)",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", start.Add(-2*time.Second), mtu("n2")), ModeEnforce, start.Add(2 * time.Second), AbortNone, "seen since the migration started"},
		{"near miss: a round that started in the migration's first second (startTimestamp has whole seconds)",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", start.Add(500*time.Millisecond), mtu("n2")), ModeEnforce, now, AbortNone, "seen since the migration started"},
		{"stale: the failing round is older than three intervals: nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), ModeEnforce, after.Add(time.Minute), AbortNone, "no failing path"},
		{"no results at all: nothing", streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), nil, ModeEnforce, now, AbortNone, "no failing path"},
		{"post-copy: never aborted, it would lose the VM",
			streaming("n1", "n2", start, kubevirtv1.MigrationPostCopy), with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "post-copy"},
		{"warn: only a warning",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), ModeWarn, now, AbortWarn, "not aborted (rule runningPathHealthy is warn)"},
		{"off (or the creator exempt): nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), ModeOff, now, AbortNone, "is off"},
		{"near miss: a migration on the same pair that already ended",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) {
				ms.Completed, ms.EndTimestamp = true, &metav1.Time{Time: after}
			}), with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "ended"},
		{"failed already: nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.Failed = true }),
			with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "ended"},
		{"abort requested already (an admin or migranet): nothing more",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.AbortRequested = true }),
			with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "abort was requested"},
		{"not streaming yet (target preparing): nothing",
			streaming("n1", "n2", start, "", func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.StartTimestamp = nil }),
			with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "not started"},
		{"no migration state", &kubevirtv1.VirtualMachineInstance{}, with("n1", after, mtu("n2")), ModeEnforce, now, AbortNone, "no migration"},
		{"nil VMI", nil, nil, ModeEnforce, now, AbortNone, "no migration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideAbort(tt.vmi, Paths(net, tt.reports), tt.mode, tt.now)
			if d.Action != tt.want {
				t.Fatalf("action = %v (%s), want %v", d.Action, d.Message, tt.want)
			}
			if !strings.Contains(d.Message, tt.msg) {
				t.Errorf("message %q lacks %q", d.Message, tt.msg)
			}
			if d.Action != AbortNone && (len(d.Faults) == 0 || d.Faults[0].Round.Before(start)) {
				t.Errorf("faults %v: want those of a round after the start", d.Faults)
			}
		})
	}
}

// Both directions failing: the source's own report comes first in the faults and the message.
func TestDecideAbortSourceFirst(t *testing.T) {
	const net = "n"
	start := t0.Add(30 * time.Second)
	after := start.Add(5 * time.Second)
	reports := []*v1beta1.PathReport{
		report("n1", net, t0, after, v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathMTU}),
		report("n2", net, t0, after, v1beta1.PeerPath{Node: "n1", Reason: v1beta1.PathUnreachable}),
	}
	for _, order := range [][]*v1beta1.PathReport{reports, {reports[1], reports[0]}} {
		d := DecideAbort(streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), Paths(net, order), ModeEnforce, after.Add(time.Second))
		if len(d.Faults) != 2 || d.Faults[0].From != "n1" {
			t.Fatalf("faults %+v: want both, n1's first", d.Faults)
		}
	}
}

func TestMigrationCreator(t *testing.T) {
	vmim := func(ann map[string]string) *kubevirtv1.VirtualMachineInstanceMigration {
		return &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	sa := "system:serviceaccount:kv:kubevirt-controller"
	for _, tt := range []struct {
		name string
		vmim *kubevirtv1.VirtualMachineInstanceMigration
		want string
	}{
		{"evacuation (node drain)", vmim(map[string]string{kubevirtv1.EvacuationMigrationAnnotation: "node-1"}), sa},
		{"workload update", vmim(map[string]string{kubevirtv1.WorkloadUpdateMigrationAnnotation: ""}), sa},
		{"near miss: another kubevirt.io annotation", vmim(map[string]string{kubevirtv1.MigrationJobNameAnnotation: "x"}), ""},
		{"kubectl create or virtctl migrate: unknown", vmim(nil), ""},
		{"nil", nil, ""},
	} {
		if got := MigrationCreator(tt.vmim, "kv"); got != tt.want {
			t.Errorf("%s: MigrationCreator = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func BenchmarkDecideAbort(b *testing.B) {
	const net = "n"
	start := t0.Add(30 * time.Second)
	after := start.Add(5 * time.Second)
	var reports []*v1beta1.PathReport
	for i := range 1000 {
		node := "node-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + time.Duration(i).String()
		reports = append(reports, report(node, net, t0, after))
	}
	reports = append(reports, report("n1", net, t0, after, v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathMTU}), report("n2", net, t0, after))
	h := Paths(net, reports)
	vmi := streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy)
	now := after.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if DecideAbort(vmi, h, ModeEnforce, now).Action != AbortDelete {
			b.Fatal("not aborted")
		}
	}
}
