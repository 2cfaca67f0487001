package migrationcheck

import (
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Traffic is the migrations streaming into (In) and out of (Out) each node, counted from the
// caches admission reads (CountTraffic). Immutable once made.
type Traffic struct {
	In, Out map[string]int
	// Counted is how many migrations were counted; Pending how many of them no node counts into
	// yet (their target pod is not bound).
	Counted, Pending int
	// Placing are the UIDs of the migrations counted whose target pod is made but not bound, in
	// order: the steering spreads a target pod away from theirs (SpreadFrom), the pods the
	// scheduler may have placed already while the counts do not show it. A bound one counts into
	// its node (In); one KubeVirt has not made a target pod for yet (its own limits hold it) has
	// nothing to spread from.
	Placing []types.UID
	// seen are the UIDs of every migration the count looked at (counted or not), in order.
	seen []types.UID
	// placing is Placing as strings, made once per count (every steered pod's spread term
	// names them); nil for a Traffic made by hand.
	placing []string
	// atLimit holds the nodes at their inbound limit worked out once for this count and the
	// policy, KubeVirt CR and node index it was worked out with (AtInboundLimit).
	atLimit atomic.Pointer[atLimitMemo]
}

// Why a migration is counted or not (CountedAs).
const (
	// NotCountedFinished: its VMIM or its VMI's migration state says it ended.
	NotCountedFinished = "finished"
	// NotCountedPostCopy: in post-copy it moves what is left once, with no re-sends, and cannot be
	// moved elsewhere: it ends on its own, and the budget's shaping still shares the node with it.
	NotCountedPostCopy = "post-copy"
	// CountedStreaming: its target node is known (the VMI's migration state, or its target pod's
	// node).
	CountedStreaming = "streaming"
	// CountedPending: its target pod is not bound yet (or not made yet): it counts out of its
	// source, where it will stream from, and into no node until the scheduler binds its target pod.
	CountedPending = "pending"
)

// Counted is how one migration counts: Why (one of the reasons above), and the nodes it counts
// out of and into ("" for none); Placing when its target pod is made but not bound yet.
type Counted struct {
	Why            string
	Source, Target string
	Placing        bool
}

// CountedAs is how migration m of vmi (nil: unknown) counts, its target pods given (the pods
// labelled with its UID; a bound one names the target node).
func CountedAs(m *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance, targets []*corev1.Pod) Counted {
	if !Unfinished(m) {
		return Counted{Why: NotCountedFinished}
	}
	var ms *kubevirtv1.VirtualMachineInstanceMigrationState
	if vmi != nil && vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == m.UID {
		ms = vmi.Status.MigrationState
	}
	switch {
	case ms != nil && (ms.Completed || ms.Failed):
		return Counted{Why: NotCountedFinished}
	case ms != nil && ms.Mode == kubevirtv1.MigrationPostCopy:
		return Counted{Why: NotCountedPostCopy}
	}
	c := Counted{Why: CountedPending}
	if vmi != nil {
		c.Source = vmi.Status.NodeName
	}
	if ms != nil && ms.SourceNode != "" {
		c.Source = ms.SourceNode
	}
	if ms != nil && ms.TargetNode != "" {
		c.Why, c.Target = CountedStreaming, ms.TargetNode
		return c
	}
	for _, p := range targets {
		if !IsMigrationTarget(p) || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		if p.Spec.NodeName != "" {
			c.Why, c.Target, c.Placing = CountedStreaming, p.Spec.NodeName, false
			return c
		}
		c.Placing = true
	}
	return c
}

// CountTraffic counts the migrations of vmims (the unfinished ones; finished ones are skipped)
// into and out of each node: vmiOf finds a migration's VMI (nil: none), targetsOf its target pods
// by its UID. A migration whose target is its source counts out of it only.
func CountTraffic(vmims []*kubevirtv1.VirtualMachineInstanceMigration, vmiOf func(namespace, name string) *kubevirtv1.VirtualMachineInstance,
	targetsOf func(uid types.UID) []*corev1.Pod) *Traffic {
	t := &Traffic{In: map[string]int{}, Out: map[string]int{}}
	for _, m := range vmims {
		if m == nil {
			continue
		}
		t.seen = append(t.seen, m.UID)
		c := CountedAs(m, vmiOf(m.Namespace, m.Spec.VMIName), targetsOf(m.UID))
		if c.Why != CountedStreaming && c.Why != CountedPending {
			continue
		}
		t.Counted++
		if c.Placing {
			t.Placing = append(t.Placing, m.UID)
		}
		if c.Target == "" {
			t.Pending++
		}
		if c.Source != "" {
			t.Out[c.Source]++
		}
		if c.Target != "" && c.Target != c.Source {
			t.In[c.Target]++
		}
	}
	slices.Sort(t.Placing)
	slices.Sort(t.seen)
	t.placing = make([]string, len(t.Placing))
	for i, uid := range t.Placing {
		t.placing[i] = string(uid)
	}
	return t
}

// Knows reports whether the count looked at the migration of uid (an unfinished VMIM when it was
// counted), whether it counts it or not.
func (t *Traffic) Knows(uid types.UID) bool {
	_, found := slices.BinarySearch(t.seen, uid)
	return found
}

// IsPlacing reports whether the target pod of the migration of uid is made but not bound.
func (t *Traffic) IsPlacing(uid types.UID) bool {
	_, found := slices.BinarySearch(t.Placing, uid)
	return found
}

// Unfinished reports whether m has not reached Succeeded or Failed (the index of the VMIMs the
// traffic is counted from).
func Unfinished(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
	return m.Status.Phase != kubevirtv1.MigrationSucceeded && m.Status.Phase != kubevirtv1.MigrationFailed
}

// migrationStateChanged reports whether a VMI event can change the traffic: its migration state
// moved (a VMI's other updates, frequent in a large cluster, do not make the traffic be counted
// again).
func migrationStateChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*kubevirtv1.VirtualMachineInstance)
	n, ok2 := newObj.(*kubevirtv1.VirtualMachineInstance)
	if !ok1 || !ok2 {
		return true
	}
	a, b := o.Status.MigrationState, n.Status.MigrationState
	if a == nil || b == nil {
		return a != b || o.Status.NodeName != n.Status.NodeName
	}
	return a.MigrationUID != b.MigrationUID || a.Mode != b.Mode || a.Completed != b.Completed || a.Failed != b.Failed ||
		a.TargetNode != b.TargetNode || a.SourceNode != b.SourceNode || o.Status.NodeName != n.Status.NodeName
}

// isTargetPodEvent reports whether a pod event can change the traffic: it is a migration target
// pod (on either side of the event).
func isTargetPodEvent(objs ...any) bool {
	return slices.ContainsFunc(objs, func(o any) bool {
		p, ok := o.(*corev1.Pod)
		return ok && IsMigrationTarget(p)
	})
}
