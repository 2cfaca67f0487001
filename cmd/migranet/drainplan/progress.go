package drainplan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// States of a VMI while the drain runs.
const (
	StateDone      = "done"      // it runs on another node now
	StateStreaming = "streaming" // its migration's stream runs
	StateStarting  = "starting"  // its migration exists, its stream has not started
	StateWaiting   = "waiting"   // no migration yet (a slot, or the eviction, to come)
	StateFailed    = "failed"    // its latest migration failed (the evacuation retries it)
	StateStopped   = "stopped"   // its VMI is gone or finished: shut down
	StateLeft      = "left"      // on the node, as the plan said it would stay (blocks, waits)
)

// ProgressRow is one VMI of the plan, now.
type ProgressRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	State     string `json:"state"`
	// Planned is the plan's verdict and target; Node where the VMI runs now (or its migration's
	// target while it streams).
	Planned       string `json:"planned"`
	PlannedTarget string `json:"plannedTarget,omitempty"`
	Node          string `json:"node,omitempty"`
	// Throughput is what KubeVirt reports of its stream (bytes a second), 0 when nothing;
	// ThroughputFrom says where from; Done and Left are the bytes KubeVirt reports moved and left.
	Throughput     int64  `json:"throughputBytesPerSecond,omitempty"`
	ThroughputFrom string `json:"throughputFrom,omitempty"`
	Done           int64  `json:"doneBytes,omitempty"`
	Left           int64  `json:"leftBytes,omitempty"`
	// Elapsed is the stream's (or the whole migration's, when done) time so far in seconds;
	// Expected the plan's for the whole migration.
	Elapsed  float64 `json:"elapsedSeconds,omitempty"`
	Expected float64 `json:"expectedSeconds,omitempty"`
	// Why says why it failed, or why it is left.
	Why string `json:"why,omitempty"`
	// Attempts counts its migrations since the plan (failed ones are retried by the evacuation).
	Attempts int `json:"attempts,omitempty"`
}

// Progress is the drain against its plan.
type Progress struct {
	Node    string         `json:"node"`
	Rows    []ProgressRow  `json:"vmis"`
	Counts  map[string]int `json:"counts"`
	Elapsed float64        `json:"elapsedSeconds"`
	// Planned is the plan's total; Finished whether every VMI that was to move or stop did.
	Planned  float64 `json:"plannedSeconds"`
	Finished bool    `json:"finished"`
}

// Track puts the cluster now against p: vmi finds a VMI (nil: gone), migrations are the VMIMs
// (any namespace), m the metrics (nil: none), since when the plan was made.
func Track(p *Plan, vmi func(ns, name string) *kubevirtv1.VirtualMachineInstance, migrations []kubevirtv1.VirtualMachineInstanceMigration,
	m *Metrics, since, now time.Time) Progress {
	pr := Progress{Node: p.Node, Counts: map[string]int{}, Elapsed: now.Sub(since).Seconds(), Planned: p.Total, Finished: true}
	for _, v := range p.VMIs {
		r := ProgressRow{Namespace: v.Namespace, Name: v.Name, Planned: v.Verdict, PlannedTarget: v.Target, Expected: v.Expected}
		cur := vmi(v.Namespace, v.Name)
		latest, attempts := latestMigration(migrations, v.Namespace, v.Name, since)
		r.Attempts = attempts
		switch {
		case cur == nil || cur.IsFinal():
			r.State = StateStopped
		case cur.Status.NodeName != p.Node:
			r.State, r.Node = StateDone, cur.Status.NodeName
			if ms := cur.Status.MigrationState; ms != nil && ms.StartTimestamp != nil && ms.EndTimestamp != nil && latest != nil {
				r.Elapsed = ms.EndTimestamp.Sub(latest.CreationTimestamp.Time).Seconds()
			}
		case latest != nil && !latest.IsFinal():
			r.State, r.Node = StateStarting, ""
			if ms := cur.Status.MigrationState; ms != nil && ms.MigrationUID == latest.UID && ms.StartTimestamp != nil {
				r.State, r.Node = StateStreaming, ms.TargetNode
				r.Elapsed = now.Sub(ms.StartTimestamp.Time).Seconds()
				if rate, done, left, from, ok := m.Streaming(v.Namespace+"/"+v.Name, string(cur.UID)); ok {
					r.Throughput, r.Done, r.Left, r.ThroughputFrom = rate, done, left, from
				}
			} else if latest.Status.Phase != "" {
				r.Why = "phase " + string(latest.Status.Phase)
			}
		case latest != nil && latest.Status.Phase == kubevirtv1.MigrationFailed:
			r.State, r.Why = StateFailed, failure(cur, latest)
		case v.Verdict == Blocks || v.Verdict == Waits:
			r.State, r.Why = StateLeft, v.Category
		default:
			r.State = StateWaiting
		}
		if r.State != StateDone && r.State != StateStopped && r.State != StateLeft {
			pr.Finished = false
		}
		pr.Counts[r.State]++
		pr.Rows = append(pr.Rows, r)
	}
	return pr
}

// latestMigration is the newest migration of VMI ns/name created since the plan, and how many
// there were.
func latestMigration(ms []kubevirtv1.VirtualMachineInstanceMigration, ns, name string, since time.Time) (*kubevirtv1.VirtualMachineInstanceMigration, int) {
	var latest *kubevirtv1.VirtualMachineInstanceMigration
	n := 0
	for i := range ms {
		m := &ms[i]
		if m.Namespace != ns || m.Spec.VMIName != name || m.CreationTimestamp.Time.Before(since.Add(-time.Second)) {
			continue
		}
		n++
		if latest == nil || m.CreationTimestamp.After(latest.CreationTimestamp.Time) {
			latest = m
		}
	}
	return latest, n
}

// failure is the reason a migration failed, as KubeVirt reports it.
func failure(vmi *kubevirtv1.VirtualMachineInstance, m *kubevirtv1.VirtualMachineInstanceMigration) string {
	for _, ms := range []*kubevirtv1.VirtualMachineInstanceMigrationState{m.Status.MigrationState, vmi.Status.MigrationState} {
		if ms != nil && ms.MigrationUID == m.UID && ms.FailureReason != "" {
			return ms.FailureReason
		}
	}
	return "no reason reported (kubectl describe vmim -n " + m.Namespace + " " + m.Name + ")"
}

// Key is what changes of a progress are worth a new report: the states, nodes and reasons (not
// the clocks).
func (pr Progress) Key() string {
	var b strings.Builder
	for _, r := range pr.Rows {
		fmt.Fprintf(&b, "%s/%s=%s@%s:%s:%d;", r.Namespace, r.Name, r.State, r.Node, r.Why, r.Attempts)
	}
	return b.String()
}

// Print writes one report: a table, or one JSON line.
func (pr Progress) Print(w io.Writer, format string) error {
	if format == "json" {
		b, err := json.Marshal(struct {
			Type string `json:"type"`
			Progress
		}{"progress", pr})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	var parts []string
	for _, s := range []string{StateDone, StateStreaming, StateStarting, StateWaiting, StateFailed, StateStopped, StateLeft} {
		if pr.Counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", pr.Counts[s], s))
		}
	}
	fmt.Fprintf(w, "\n%s into the drain of %s (plan: %s): %s\n", Clock(pr.Elapsed), pr.Node, Clock(pr.Planned), strings.Join(parts, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VMI\tSTATE\tNODE\tPLANNED\tTHROUGHPUT\tELAPSED\tEXPECTED\tWHY")
	for _, r := range pr.Rows {
		node, thr, el, exp := dash(r.Node), "-", "-", "-"
		planned := r.Planned
		if r.PlannedTarget != "" {
			planned += " to " + r.PlannedTarget
		}
		if r.Throughput > 0 {
			thr = Rate(r.Throughput)
		}
		if r.Elapsed > 0 {
			el = Clock(r.Elapsed)
		}
		if r.Expected > 0 {
			exp = Clock(r.Expected)
		}
		why := r.Why
		if r.State == StateDone && r.PlannedTarget != "" && r.Node != r.PlannedTarget {
			why = strings.TrimPrefix(why+"; not the planned target "+r.PlannedTarget, "; ")
		}
		if r.Attempts > 1 {
			why = strings.TrimPrefix(why+fmt.Sprintf("; attempt %d", r.Attempts), "; ")
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.State, node, planned, thr, el, exp, why)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
