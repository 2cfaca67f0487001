package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// since is p first found by a probe sent at t (zero: not said) after a check of the pair.
func since(p v1beta1.PeerPath, t time.Time) v1beta1.PeerPath {
	p.AfterCheck = true
	if t.IsZero() {
		p.Since = &metav1.MicroTime{}
		return p
	}
	at := metav1.NewMicroTime(t)
	p.Since = &at
	return p
}

// firstLook is p found failing by the reporting agent's first check of the pair.
func firstLook(p v1beta1.PeerPath) v1beta1.PeerPath {
	p.AfterCheck = false
	return p
}

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

// Faults caught (each injected once into DecideAbort and seen to fail this table): a failure
// counted by the round that found it again instead of the one that first found it ("failing
// since before the migration started"), an unknown beginning counted, a failure found by an
// agent's first check of the pair trusted ("first check ... restarted without its verdict", "the
// target's agent's first check"), a fault
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
	// with is the healthy reports but node's, whose last round started at round and found
	// failing; an entry without a Since was first found by that round.
	with := func(node string, round time.Time, failing ...v1beta1.PeerPath) []*v1beta1.PathReport {
		out := []*v1beta1.PathReport{}
		for _, r := range healthy {
			if r.Name == node {
				for i := range failing {
					if failing[i].Since == nil {
						first := metav1.NewMicroTime(round)
						failing[i].Since, failing[i].AfterCheck = &first, true
					}
				}
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
		mode    settings.Mode
		now     time.Time
		want    AbortAction
		msg     string // substring of the decision's message
	}{
		{"source's own round finds its path to the target failing (MTU): aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortDelete,
			"migration path n1 -> n2 failed while the migration streamed: 9000-byte frames from n1 to n2 do not arrive (largest that crossed: 1500)"},
		{"mode not yet written (started a moment ago): judged as pre-copy",
			streaming("n1", "n2", start, ""), with("n1", after, unreach("n2")), settings.ModeEnforce, now, AbortDelete, "no probe from n1 reaches n2"},
		{"Paused (the guest suspended to converge): aborted like pre-copy",
			streaming("n1", "n2", start, kubevirtv1.MigrationPaused), with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"the target's report: nothing it sends reaches the source (acknowledgements lost): aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, unreach("n1")), settings.ModeEnforce, now, AbortDelete, "no probe from n2 reaches n1"},
		{"near miss: only the reverse direction drops full-size frames (the bulk flows n1 -> n2): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, mtu("n1")), settings.ModeEnforce, now, AbortNone, "no failing path between n1 and n2"},
		{"near miss: the same pair migrating the other way (n2 -> n1): n1's MTU fault is the reverse direction now",
			streaming("n2", "n1", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "no failing path between n2 and n1"},
		{"near miss: the source's path to another node fails",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n3")), settings.ModeEnforce, now, AbortNone, "no failing path"},
		{"near miss: the target's path to another node fails",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, unreach("n3")), settings.ModeEnforce, now, AbortNone, "no failing path"},
		{"near miss: failing since before the migration started, found again by a round after it (warn let it try a distrusted path): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, since(mtu("n2"), start.Add(-10*time.Second))), settings.ModeEnforce, now, AbortNone,
			"was failing before the migration started (9000-byte frames from n1 to n2 do not arrive"},
		{"first found by a probe sent in the second of the startTimestamp (whole seconds, cut down): aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, since(mtu("n2"), start.Add(time.Millisecond))), settings.ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"near miss: first found by a probe sent a millisecond before the startTimestamp",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, since(mtu("n2"), start.Add(-time.Millisecond))), settings.ModeEnforce, now, AbortNone, "was failing before"},
		{"first found by a probe sent a second after the migration started: aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, since(mtu("n2"), start.Add(time.Second))), settings.ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"near miss: the target's report of a failure from before, the source's of none",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, since(unreach("n1"), t0)), settings.ModeEnforce, now, AbortNone, "was failing before"},
		{"near miss: when the failure began is not said (an agent before the field): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, since(mtu("n2"), time.Time{})), settings.ModeEnforce, now, AbortNone, "was failing before"},
		{"near miss: found by the source's agent's first check of the pair after the start (restarted without its verdict): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, firstLook(since(mtu("n2"), after))), settings.ModeEnforce, now, AbortNone, "was failing before"},
		{"near miss: found by the target's agent's first check after the start (its reverse Unreachable): not aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n2", after, firstLook(since(unreach("n1"), after))), settings.ModeEnforce, now, AbortNone, "was failing before"},
		{"a restarted agent that checked the pair a round after its start, then found it failing: aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), []*v1beta1.PathReport{report("n1", net, start.Add(2*time.Second), after, since(mtu("n2"), after)), healthy[1], healthy[2]},
			settings.ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"near miss: a round from before the migration started (the failure was not seen while it streams)",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", start.Add(-2*time.Second), mtu("n2")), settings.ModeEnforce, start.Add(2 * time.Second), AbortNone, "was failing before the migration started"},
		{"a round that started in the migration's first second and first found it: aborted",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", start.Add(500*time.Millisecond), mtu("n2")), settings.ModeEnforce, now, AbortDelete, "aborted by migranet"},
		{"stale: the failing round is older than three intervals: nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), settings.ModeEnforce, after.Add(time.Minute), AbortNone, "no failing path"},
		{"no results at all: nothing", streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), nil, settings.ModeEnforce, now, AbortNone, "no failing path"},
		{"post-copy: never aborted, it would lose the VM",
			streaming("n1", "n2", start, kubevirtv1.MigrationPostCopy), with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "post-copy"},
		{"warn: only a warning",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), settings.ModeWarn, now, AbortWarn, "not aborted (rule runningPathHealthy is warn)"},
		{"off (or the creator exempt): nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), with("n1", after, mtu("n2")), settings.ModeOff, now, AbortNone, "is off"},
		{"near miss: a migration on the same pair that already ended",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) {
				ms.Completed, ms.EndTimestamp = true, &metav1.Time{Time: after}
			}), with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "ended"},
		{"failed already: nothing",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.Failed = true }),
			with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "ended"},
		{"abort requested already (an admin or migranet): nothing more",
			streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy, func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.AbortRequested = true }),
			with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "abort was requested"},
		{"not streaming yet (target preparing): nothing",
			streaming("n1", "n2", start, "", func(ms *kubevirtv1.VirtualMachineInstanceMigrationState) { ms.StartTimestamp = nil }),
			with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "not started"},
		{"no migration state", &kubevirtv1.VirtualMachineInstance{}, with("n1", after, mtu("n2")), settings.ModeEnforce, now, AbortNone, "no migration"},
		{"nil VMI", nil, nil, settings.ModeEnforce, now, AbortNone, "no migration"},
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
			if d.Action != AbortNone && (len(d.Faults) == 0 || d.Faults[0].Since.Before(start)) {
				t.Errorf("faults %v: want those first found by a probe after the start", d.Faults)
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
		report("n1", net, t0, after, since(v1beta1.PeerPath{Node: "n2", Reason: v1beta1.PathMTU}, after)),
		report("n2", net, t0, after, since(v1beta1.PeerPath{Node: "n1", Reason: v1beta1.PathUnreachable}, after)),
	}
	for _, order := range [][]*v1beta1.PathReport{reports, {reports[1], reports[0]}} {
		d := DecideAbort(streaming("n1", "n2", start, kubevirtv1.MigrationPreCopy), Paths(net, order), settings.ModeEnforce, after.Add(time.Second))
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
		if got := settings.MigrationCreator(tt.vmim, "kv"); got != tt.want {
			t.Errorf("%s: settings.MigrationCreator = %q, want %q", tt.name, got, tt.want)
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
		if DecideAbort(vmi, h, settings.ModeEnforce, now).Action != AbortDelete {
			b.Fatal("not aborted")
		}
	}
}

// The abort annotation counts only on a VMIM whose delete succeeded (it is being deleted).
// Fault caught: AbortedBy reading the annotation alone (the near miss: a VMIM whose delete failed
// after v0.2.0 annotated it, which then completed, read "aborted").
func TestAbortedBy(t *testing.T) {
	deleted := metav1.Now()
	for _, tc := range []struct {
		name    string
		deleted *metav1.Time
		ann     map[string]string
		want    string
	}{
		{"annotated and being deleted", &deleted, map[string]string{AbortedAnnotation: "path failed"}, "path failed"},
		{"annotated, delete failed (near miss)", nil, map[string]string{AbortedAnnotation: "path failed"}, ""},
		{"being deleted by someone else", &deleted, nil, ""},
		{"neither", nil, nil, ""},
	} {
		m := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tc.deleted, Annotations: tc.ann}}
		if got := AbortedBy(m); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if AbortedBy(nil) != "" {
		t.Error("no VMIM: not aborted")
	}
}
