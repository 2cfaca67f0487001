package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// write is one status write of the handoff: the side that made it and the fields it set.
type write struct {
	side   string
	fields string
}

// handoff runs the stand-in's source and target steps on an in-memory VMI whose target has
// already advertised its address (updateStatus' first write), applying each merge patch, until
// neither side has anything to write, and returns the writes in order.
func handoff(t *testing.T, path PathVerdict, mode string) []write {
	return handoffWith(t, path, nil, mode)
}

// handoffWith is handoff with the source's stream reporting rep (nil: no stream, the model decides).
func handoffWith(t *testing.T, path PathVerdict, rep *StreamReport, mode string) []write {
	t.Helper()
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "mig"}}
	if mode != "" {
		vmim.Annotations = map[string]string{HandlerModeAnnotation: mode}
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Labels: map[string]string{kubevirtv1.MigrationTargetNodeNameLabel: "n2"},
			Annotations: map[string]string{kubevirtv1.CreateMigrationTarget: "true"}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "n1",
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "mig", SourceNode: "n1", TargetNode: "n2",
				TargetNodeAddress: "192.168.100.3", TargetDirectMigrationNodePorts: map[string]int{"30000": 0}}},
	}
	h := &VirtHandlerStandIn{MigrationTime: 0}
	var out []write
	for range 20 {
		side, patch := "source", sourceStep(vmi, vmim, path, rep, h.MigrationTime)
		if patch == nil {
			if vmi.Labels[kubevirtv1.MigrationTargetNodeNameLabel] != "n2" {
				return out
			}
			var err error
			side = "target"
			if patch, _, err = h.targetStep(t.Context(), vmi, vmim, path, rep); err != nil {
				t.Fatal(err)
			}
		}
		if patch == nil {
			return out
		}
		out = append(out, write{side, describe(patch)})
		raw, _ := json.Marshal(vmi)
		var doc map[string]any
		_ = json.Unmarshal(raw, &doc)
		raw, _ = json.Marshal(patch)
		var plain map[string]any
		_ = json.Unmarshal(raw, &plain)
		mergePatch(doc, plain)
		raw, _ = json.Marshal(doc)
		next := &kubevirtv1.VirtualMachineInstance{}
		if err := json.Unmarshal(raw, next); err != nil {
			t.Fatal(err)
		}
		vmi = next
	}
	t.Fatalf("no end after 20 writes: %v", out)
	return nil
}

// describe lists a patch's leaves (migrationState fields by name, others by path), sorted.
func describe(patch map[string]any) string {
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && k != "targetDirectMigrationNodePorts" {
				walk(prefix+k+".", sub)
				continue
			}
			keys = append(keys, strings.TrimPrefix(strings.TrimPrefix(prefix+k, "status.migrationState."), "status."))
		}
	}
	walk("", patch)
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// TestHandoffOrder checks who writes what, in which order, against KubeVirt v1.8.4's virt-handler:
// the target advertises targetNodeAddress and targetDirectMigrationNodePorts
// (MigrationTargetController.updateStatus, pkg/virt-handler/migration-target.go) before the source
// starts (startTimestamp and mode, MigrationSourceController.setMigrationProgressStatus,
// migration-source.go); the target then reports targetNodeDomainDetected, and in post-copy
// targetNodeDomainReadyTimestamp (updateStatus); ackMigrationCompletion writes endTimestamp and
// moves the VMI (nodeName, node label); finalizeMigration sets completed; finalCleanup drops the
// target label, and the CreateMigrationTarget annotation only after a success. A failure is
// reported by the source alone (failed, endTimestamp, failureReason from the launcher's metadata;
// the target's updateStatus returns early once migrations.MigrationFailed), then the target's
// finalCleanup drops its label.
// Catches: a stand-in whose handoff writes come from the wrong side or in another order, or that
// completes a migration its path cannot carry.
func TestHandoffOrder(t *testing.T) {
	start := write{"source", "mode startTimestamp"}
	detected := write{"target", "targetNodeDomainDetected"}
	ack := write{"target", "endTimestamp evacuationNodeName launcherContainerImageVersion metadata.annotations.kubevirt.io/eviction-source " +
		"metadata.labels.kubevirt.io/nodeName metadata.labels.kubevirt.io/outdatedLauncherImage migrationTransport nodeName targetNodeDomainReadyTimestamp"}
	completed := write{"target", "completed"}
	cleanupOK := write{"target", "metadata.annotations.kubevirt.io/create-migration-target metadata.labels.kubevirt.io/migrationTargetNodeName"}
	cleanupFailed := write{"target", "metadata.labels.kubevirt.io/migrationTargetNodeName"}
	failed := write{"source", "endTimestamp failed failureReason"}
	cases := []struct {
		name string
		path PathVerdict
		mode string
		want []write
	}{
		{"a path that carries it", PathVerdict{Network: "Migration"}, "", []write{start, detected, ack, completed, cleanupOK}},
		{"post-copy", PathVerdict{Network: "Migration"}, "PostCopy", []write{start, detected, {"source", "mode"}, {"target", "targetNodeDomainReadyTimestamp"},
			{"target", strings.Replace(ack.fields, " targetNodeDomainReadyTimestamp", "", 1)}, completed, cleanupOK}},
		{"the source cannot reach the target", PathVerdict{Broken: true, Why: "x"}, "", []write{start, failed, cleanupFailed}},
		{"full-size frames are dropped", PathVerdict{Stalls: true, Why: "x"}, "", []write{start, detected, failed, cleanupFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := handoff(t, tc.path, tc.mode)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("writes\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestFailureReasons: the failure reasons are KubeVirt v1.8.4's texts (live-migration-source.go:
// "Live migration failed %v" for an error of the migration call, "Live migration stuck for %d
// seconds and has been aborted" from the progress monitor).
func TestFailureReasons(t *testing.T) {
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{}
	vmi := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "n1",
		MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNodeAddress: "192.168.100.3",
			StartTimestamp: &metav1.Time{Time: time.Now().Add(-time.Minute)}, TargetNodeDomainDetected: true}}}
	reason := func(p PathVerdict) string {
		patch := sourceStep(vmi, vmim, p, nil, time.Second)
		if patch == nil {
			return ""
		}
		return patch["status"].(map[string]any)["migrationState"].(map[string]any)["failureReason"].(string)
	}
	if got := reason(PathVerdict{Broken: true, Why: "no route to host 192.168.100.3: because"}); got != "Live migration failed dial tcp 192.168.100.3: connect: no route to host 192.168.100.3: because" {
		t.Errorf("broken: %q", got)
	}
	if got := reason(PathVerdict{Stalls: true}); got != "Live migration stuck for 150 seconds and has been aborted" {
		t.Errorf("stalls: %q", got)
	}
	if got := reason(PathVerdict{Network: "Migration"}); got != "" {
		t.Errorf("a working path failed: %q", got)
	}
}

// TestStreamHandoff: with a stream, what crossed decides, not the model or the clock: the domain
// reached the target once the target accepted the memory stream, the migration completes once
// every round crossed, fails with the stream's own reason (the dial's, the monitor's), and takes
// the mode the monitor switched to.
// Catches: a stand-in that completes a stream that has not crossed (MigrationTime, or the model's
// verdict, deciding), reports the domain on the target before the connection, or drops the
// monitor's reason or mode.
func TestStreamHandoff(t *testing.T) {
	start := write{"source", "mode startTimestamp"}
	detected := write{"target", "targetNodeDomainDetected"}
	ack := write{"target", "endTimestamp evacuationNodeName launcherContainerImageVersion metadata.annotations.kubevirt.io/eviction-source " +
		"metadata.labels.kubevirt.io/nodeName metadata.labels.kubevirt.io/outdatedLauncherImage migrationTransport nodeName targetNodeDomainReadyTimestamp"}
	completed := write{"target", "completed"}
	cleanupOK := write{"target", "metadata.annotations.kubevirt.io/create-migration-target metadata.labels.kubevirt.io/migrationTargetNodeName"}
	cleanupFailed := write{"target", "metadata.labels.kubevirt.io/migrationTargetNodeName"}
	failed := write{"source", "endTimestamp failed failureReason"}
	ok := PathVerdict{Network: "Migration"}
	cases := []struct {
		name string
		path PathVerdict
		rep  StreamReport
		want []write
	}{
		{"crossed whole", ok, StreamReport{Started: true, Connected: true, Done: true}, []write{start, detected, ack, completed, cleanupOK}},
		{"still streaming: nothing after the domain reached the target", ok, StreamReport{Started: true, Connected: true}, []write{start, detected}},
		{"the model's verdict does not decide a stream", PathVerdict{Stalls: true, Broken: true}, StreamReport{Started: true, Connected: true, Done: true},
			[]write{start, detected, ack, completed, cleanupOK}},
		{"not connected: the domain never reached the target", ok, StreamReport{Started: true}, []write{start}},
		{"the dial failed", ok, StreamReport{Started: true, Failure: "Live migration failed x"}, []write{start, failed, cleanupFailed}},
		{"the monitor aborted it", ok, StreamReport{Started: true, Connected: true, Failure: "Live migration stuck for 6 seconds and has been aborted"},
			[]write{start, failed, cleanupFailed}},
		{"the monitor switched it to post-copy", ok, StreamReport{Started: true, Connected: true, Mode: kubevirtv1.MigrationPostCopy},
			[]write{start, {"source", "mode"}, detected, {"target", "targetNodeDomainReadyTimestamp"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := handoffWith(t, tc.path, &tc.rep, "")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("writes\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}
