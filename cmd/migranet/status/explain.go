package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
)

// SlowAfter is how long a migration may take before the one-migration view calls it slow: a
// guest of a few GiB crosses a 10 Gbit/s migration network in seconds, and KubeVirt's default
// progress timeout is 150 s.
const SlowAfter = time.Minute

// Story is everything the one-migration view (`migranet status -n NS NAME`) reads about one
// migration; cmd/migranet fills it from the cluster. Explain reads nothing else.
type Story struct {
	Namespace, Name string
	// VMIM is the migration; nil when it is gone (deleted after a cancel or an abort) or was
	// never created (refused at admission).
	VMIM *kubevirtv1.VirtualMachineInstanceMigration
	// UID is the migration's UID: the VMIM's, else the one its events name; "" when unknown.
	UID types.UID
	// VMIName names its VMI (the VMIM's spec, else its events); VMI is that VMI, nil when gone.
	VMIName string
	VMI     *kubevirtv1.VirtualMachineInstance
	// TargetPod is the migration's target virt-launcher pod, nil when none is found.
	TargetPod *corev1.Pod
	// Events are the namespace's events about the migration, its VMI and its target pod (Explain
	// picks what concerns this migration).
	Events []corev1.Event
	// PathNow is the path verdict between the migration's nodes from the PathReports now, in words
	// (health.PathHealth.Pair), "" when not judged (no nodes, no migration network).
	PathNow string
	Now     time.Time
}

// Step is one link of the chain.
type Step struct{ Name, Text string }

// Explanation is a migration's story: its cause in one line, the chain in order, what to do.
type Explanation struct {
	Title string
	Cause string
	Steps []Step
	Do    string
}

// Explain tells s's migration as a chain: admitted, target pod steered, scheduled, stream
// started, progress, path verdict at the start and now, end, and one line of what to do.
func Explain(s Story) Explanation {
	e := Explanation{Title: fmt.Sprintf("migration %s/%s of VMI %s", s.Namespace, s.Name, orNone(s.VMIName))}
	ms, recorded := s.state()
	refused := s.refusal()
	abortNote := s.abortReason()
	warnedPath, _ := s.message(health.ReasonMigrationPathFailing)

	// 1. admission
	switch {
	case refused != nil:
		e.Steps = append(e.Steps, Step{"admitted", "no: " + oneLine(refused.Message)})
		e.Cause = "refused at admission: " + firstRule(refused.Message)
		e.Do = "fix what the refusal names (`migranet preflight` answers rule by rule and node by node), then create the migration again"
		return e
	case s.VMIM == nil && s.UID == "":
		e.Steps = append(e.Steps, Step{"admitted", "no migration " + s.Name + " and no event about it in the namespace (events expire after an hour)"})
		e.Cause = "not found"
		e.Do = "check the name and namespace (`migranet status -n NS` lists the migrations)"
		return e
	}
	if w := s.warned(); len(w) > 0 {
		e.Steps = append(e.Steps, Step{"admitted", "with warnings: " + strings.Join(w, "; ")})
	} else {
		e.Steps = append(e.Steps, Step{"admitted", "without warnings"})
	}

	// 2. steering
	steer := "no steering event (nothing excluded, or the target pod was not created)"
	noTarget := s.event(settings.ReasonNoTargetLeft, kindVMIM)
	if st := s.event(settings.ReasonTargetSteered, kindVMIM); st != nil {
		steer = oneLine(st.Message)
	}
	if noTarget != nil {
		steer = "no node left: " + oneLine(noTarget.Message)
	}
	e.Steps = append(e.Steps, Step{"target pod", steer})

	// 3. scheduling
	pending := ""
	switch p := s.TargetPod; {
	case p != nil && p.Spec.NodeName != "":
		e.Steps = append(e.Steps, Step{"scheduled", "on " + p.Spec.NodeName + " (pod " + p.Name + ")"})
	case p != nil:
		pending = s.schedulerReason(p)
		e.Steps = append(e.Steps, Step{"scheduled", "no, Pending: " + pending})
	case ms != nil && ms.TargetNode != "":
		e.Steps = append(e.Steps, Step{"scheduled", "on " + ms.TargetNode + " (the target pod is gone)"})
	default:
		e.Steps = append(e.Steps, Step{"scheduled", "no target pod"})
	}

	// 4. stream, 5. progress
	var started, ended *time.Time
	if ms != nil && ms.StartTimestamp != nil {
		started = &ms.StartTimestamp.Time
		stream := fmt.Sprintf("%s from %s to %s over %s", ms.StartTimestamp.UTC().Format(time.RFC3339),
			orUnknownNode(ms.SourceNode), orUnknownNode(ms.TargetNode), streamNetwork(ms))
		if recorded != nil {
			stream += " (as migranet's " + recorded.Reason + " event recorded it: the VMI has moved on)"
		}
		e.Steps = append(e.Steps, Step{"stream started", stream})
		end := s.Now
		if ms.EndTimestamp != nil {
			ended = &ms.EndTimestamp.Time
			end = *ended
		}
		switch {
		case recorded != nil && recorded.Reason == health.ReasonMigrationPathBroken:
			e.Steps = append(e.Steps, Step{"progress", "streamed " + duration.HumanDuration(eventFirst(*recorded).Sub(*started)) +
				" until migranet aborted it; bytes: not reported by KubeVirt's API"})
		case recorded != nil:
			e.Steps = append(e.Steps, Step{"progress", "not known: the VMI has moved on; bytes: not reported by KubeVirt's API"})
		default:
			e.Steps = append(e.Steps, Step{"progress", progress(s.VMI, end.Sub(*started), ended != nil, ms.Completed)})
		}
	} else {
		e.Steps = append(e.Steps, Step{"stream started", "no"})
	}

	// 6. path verdicts
	if ms != nil && ms.SourceNode != "" && ms.TargetNode != "" {
		atEnd := "now: " + orText(s.PathNow, "not judged (no probe results)")
		switch {
		case abortNote != "":
			atEnd = "when aborted: " + abortNote + "; " + atEnd
		case warnedPath != "":
			atEnd = "while it streamed: " + oneLine(warnedPath) + "; " + atEnd
		}
		e.Steps = append(e.Steps, Step{"path " + ms.SourceNode + " <-> " + ms.TargetNode,
			"at the start: not recorded (no event holds the verdict when a stream starts); " + atEnd})
	}

	// 7. end, cause, what to do
	row := Row{}
	if s.VMIM != nil {
		row = Combine(s.VMIM, s.VMI, s.Now)
	}
	took := ""
	if started != nil && ended != nil {
		took = duration.HumanDuration(ended.Sub(*started))
	}
	switch {
	case abortNote != "":
		stays := "the VMI stays on " + orUnknownNode(sourceOf(ms))
		if recorded != nil {
			stays = "the VMI stayed on " + orUnknownNode(sourceOf(ms)) + "; it has started another migration since"
		}
		e.Steps = append(e.Steps, Step{"ended", "aborted by migranet (rule " + string(settings.RuleRunningPathHealthy) + "), " + stays})
		e.Cause = "aborted by migranet: its path failed while it streamed"
		e.Do = "repair the path named above (uplink MTU, cabling, switch VLAN, firewall); a drain's evacuation creates a new migration by itself and the steering keeps it off the failing pair; for a manual migration run `virtctl migrate` again"
	case ms != nil && ms.Failed:
		reason := orNoReason(ms.FailureReason)
		e.Steps = append(e.Steps, Step{"ended", "failed: " + reason})
		e.Cause = "failed: " + reason
		e.Do = "KubeVirt's reason above says where it broke; check the path between its nodes (`kubectl get pathreports`, the header of `migranet status`)"
		if strings.Contains(reason, "stuck") {
			e.Do = "the stream made no progress until KubeVirt's progressTimeout: the path between " + ms.SourceNode + " and " + ms.TargetNode +
				" carried nothing (an uplink narrower than the network's MTU, a dropped direction); repair it, or keep runningPathHealthy at enforce so such a stream ends within a probe round"
		}
	case s.VMIM == nil && recorded != nil:
		e.Steps = append(e.Steps, Step{"ended", "not known: its migration object is gone (deleted) and its VMI has moved on to another migration"})
		e.Cause = "gone: deleted, and its VMI has moved on"
		e.Do = "nothing for this one; `migranet status -n NS` lists the VMI's migrations now"
	case row.State == StateFailed:
		e.Steps = append(e.Steps, Step{"ended", "failed: " + row.Reason})
		e.Cause = "failed: " + row.Reason
		e.Do = "KubeVirt's reason above says where it broke"
	case row.State == StateCancelled || (ms != nil && ms.AbortStatus == kubevirtv1.MigrationAbortSucceeded):
		e.Steps = append(e.Steps, Step{"ended", "cancelled (the migration was deleted)"})
		e.Cause = "cancelled"
		e.Do = "nothing: someone cancelled it (`virtctl migrate-cancel` or a delete of the VMIM)"
	case ms != nil && ms.Completed:
		e.Steps = append(e.Steps, Step{"ended", "succeeded in " + orText(took, "an unknown time")})
		e.Cause = "succeeded in " + orText(took, "an unknown time")
		e.Do = "nothing"
		if started != nil && ended != nil && ended.Sub(*started) > SlowAfter {
			e.Cause = "succeeded, slowly: " + took
			e.Do = "look at the path's verdict and round-trip times (`kubectl get pathreports`), KubeVirt's bandwidthPerMigration and the guest's dirty rate; a migration that never converges ends at completionTimeoutPerGiB"
		}
	case pending != "" || noTarget != nil:
		e.Steps = append(e.Steps, Step{"ended", "not yet: waiting for a node"})
		e.Cause = "target pod Pending: " + orText(pending, "no node left after steering")
		e.Do = "repair the failing paths the steering excluded (the header of `migranet status` lists them) or free a node; KubeVirt fails the migration after 5 minutes unschedulable"
	case started != nil:
		e.Steps = append(e.Steps, Step{"ended", "not yet: " + row.StateText()})
		e.Cause = "streaming for " + duration.HumanDuration(s.Now.Sub(*started))
		e.Do = "wait; if it makes no progress, KubeVirt aborts it after its progressTimeout and migranet aborts it within a probe round once its path fails"
	default:
		e.Steps = append(e.Steps, Step{"ended", "not yet: " + orText(row.StateText(), "unknown")})
		e.Cause = orText(row.StateText(), "unknown")
		e.Do = "wait for KubeVirt to prepare the target"
	}
	return e
}

// Write prints the explanation: the title and cause, the numbered chain, what to do.
func (e Explanation) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", e.Title, e.Cause)
	width := 0
	for _, s := range e.Steps {
		width = max(width, len(s.Name))
	}
	for i, s := range e.Steps {
		fmt.Fprintf(&b, "  %d. %-*s  %s\n", i+1, width, s.Name, s.Text)
	}
	fmt.Fprintf(&b, "what to do: %s\n", e.Do)
	_, err := io.WriteString(w, b.String())
	return err
}

// warned is the warnings the migration was admitted with.
func (s Story) warned() []string {
	ev := s.event(settings.ReasonMigrationWarned, kindVMI)
	if ev == nil {
		return nil
	}
	return strings.Split(ev.Message, "\n")[1:]
}

// schedulerReason is why the scheduler has not placed p: its PodScheduled condition, else the
// latest FailedScheduling event.
func (s Story) schedulerReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && (c.Reason != "" || c.Message != "") {
			return oneLine(strings.TrimSuffix(c.Reason+": "+c.Message, ": "))
		}
	}
	if ev := s.event("FailedScheduling", "Pod"); ev != nil {
		return oneLine(ev.Message)
	}
	return "not scheduled yet (no reason from the scheduler)"
}

// streamNetwork says which network and address the stream uses.
func streamNetwork(ms *kubevirtv1.VirtualMachineInstanceMigrationState) string {
	nw := "the pod network"
	switch {
	case ms.VMIMConfigurationOptions != nil && ms.VMIMConfigurationOptions.Network != nil:
		nw = "the migration network " + *ms.VMIMConfigurationOptions.Network
	case ms.MigrationNetworkType == kubevirtv1.Migration:
		nw = "the migration network"
	case ms.VMIMConfigurationOptions == nil && ms.MigrationNetworkType == "":
		nw = "a network KubeVirt did not report"
	}
	return nw + ", target address " + orNone(ms.TargetNodeAddress)
}

// progress words how far the stream got: KubeVirt reports no byte counts in the API (the patched
// virt-handler exports them as metrics), so the guest's memory over the time taken is the floor
// of the throughput once it completed (a migration that failed or was aborted moved less).
func progress(vmi *kubevirtv1.VirtualMachineInstance, took time.Duration, ended, completed bool) string {
	verb := "running for"
	if ended {
		verb = "took"
	}
	out := verb + " " + duration.HumanDuration(took)
	if mem := guestMemory(vmi); mem > 0 && completed && took > 0 {
		out += fmt.Sprintf("; guest memory %d MiB, at least %.1f MiB/s", mem>>20, float64(mem>>20)/took.Seconds())
	}
	return out + "; bytes: not reported by KubeVirt's API"
}

// guestMemory is the VMI's guest memory in bytes, 0 when not known.
func guestMemory(vmi *kubevirtv1.VirtualMachineInstance) int64 {
	if vmi == nil {
		return 0
	}
	if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil {
		return m.Guest.Value()
	}
	if q, ok := vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}

// firstRule is the first "rule: message" of a refusal event.
func firstRule(msg string) string {
	_, rest, ok := strings.Cut(msg, "refused by migranet ")
	if !ok {
		return oneLine(msg)
	}
	first, _, _ := strings.Cut(rest, "; ")
	return oneLine(first)
}

func sourceOf(ms *kubevirtv1.VirtualMachineInstanceMigrationState) string {
	if ms == nil {
		return ""
	}
	return ms.SourceNode
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
