package migrationcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck/targetpod"
)

// The feasibleTarget checks, in the order a node is judged; a node's stage is the first check it
// fails, and the denial counts nodes per stage (and per taint, label or resource within one).
type stage int

const (
	stageSource         stage = iota // the VMI's current node
	stageOccupied                    // runs another pod of the VMI (KubeVirt's anti-affinity)
	stageReady                       // NodeReady condition not True
	stageCordoned                    // spec.unschedulable, not tolerated
	stageTaint                       // a NoSchedule/NoExecute taint the VMI does not tolerate
	stageSelector                    // lacks a label of the target pod's node selector
	stageAffinity                    // fails the target pod's required node affinity
	stageVirtHandler                 // not eligible for virt-handler
	stageClusterNetwork              // does not carry the configured cluster network
	stageNotAttached                 // its virt-handler is not on the current migration network
	stageRoom                        // cannot hold the target pod's requests
	numStages                        // feasible
)

// target is the migration target pod as the scheduler will judge it, with what migranet adds
// (virt-handler and the cluster network on the node).
type target struct {
	c targetpod.Constraints
	// affinity is the target pod's required node affinity (nodeaffinity.GetRequiredNodeAffinity
	// of a pod carrying only the affinity: the node selector is judged label by label), parsed on
	// first use (matchAffinity): the node index answers most reviews without it.
	affinity       nodeaffinity.RequiredNodeAffinity
	affinityParsed bool
	source         string
	sourceIx       int      // the source's position in the node index, -1 when it has none
	occupied       []string // the nodes of the VMI's pods
	occupiedBuf    [2]string
	// requests is the target pod's (the source pod's) requests; nil when unknown (room is then
	// not judged). demand is the same in amount units, in the scheduler's order.
	requests corev1.ResourceList
	demand   []demand
	need     roomClass // needOf(demand)
	// demandBuf holds demand when it fits (cpu, memory, ephemeral storage and one more).
	demandBuf [4]demand
	pods      PodView
	// unknown says what could not be judged for want of the pods, "" when nothing; it is named
	// in a denial only (a running VMI always has its pod: its absence is a transient of the cache).
	unknown  string
	kvLabels []label
	kvSel    map[string]string
	// clusterNetwork is the configured cluster network, "" when none is in force;
	// clusterNetworkLabel is its node label, built once.
	clusterNetwork, clusterNetworkLabel string
	// notAttached are the eligible nodes whose virt-handler is not on the current migration
	// network, with the reason (the snapshot's NotAttached; nil when all are or none is in force):
	// a migration to one of them could not use the migration network.
	notAttached map[string]string
	network     string // the NAD they are not on
	// paths is what rule pathHealthy judges; off unless the rule is on and probe results of the
	// network are known.
	paths pathCheck
}

// newTarget derives the target pod of in (whose VMI is set), or returns the message of a conflict
// between the VMI's nodeSelector and spec.addedNodeSelector: virt-controller keeps the VMI's value,
// so the migration would silently ignore what spec.addedNodeSelector asks for.
func newTarget(in *CreateInput) (*target, string) {
	vmi, vmim := in.VMI, in.VMIM
	if msg := selectorConflict(vmi, vmi.Spec.NodeSelector, vmim.Spec.AddedNodeSelector); msg != "" {
		return nil, msg
	}
	t := &target{source: vmi.Status.NodeName, sourceIx: -1, pods: in.Pods}
	sourceNode := in.node(t.source)
	if i, ok := in.index.position(t.source); ok {
		t.sourceIx = i
	}
	var sourcePod *corev1.Pod
	t.occupied = t.occupiedBuf[:0] // a running VMI has one pod, two while it migrates
	if in.Pods != nil {
		for _, p := range in.Pods.OfVMI(vmi.UID) {
			t.occupied = append(t.occupied, p.Spec.NodeName)
			if p.Spec.NodeName == t.source && p.Labels[kubevirtv1.AppLabel] == "virt-launcher" {
				sourcePod = p
			}
		}
	}
	tin := targetpod.Input{VMI: vmi, VMIM: vmim, KubeVirt: in.KubeVirt, SourceNode: sourceNode}
	if t.sourceIx >= 0 {
		tin.SourceVendor = &in.index.vendors[t.sourceIx]
	}
	if sourcePod != nil {
		tin.SourcePodSelector = sourcePod.Spec.NodeSelector
		t.requests = podRequests(sourcePod)
		t.demand = appendDemand(t.demandBuf[:0], t.requests)
		t.need = needOf(t.demand)
	}
	t.c = targetpod.Render(tin)
	switch {
	case vmi.Spec.PriorityClassName != "":
		// The scheduler may preempt lower-priority pods to make room (its DefaultPreemption
		// plugin): room alone cannot refuse, so it is not judged, and the admission says so.
		t.requests, t.demand = nil, nil
		t.c.NotEvaluated = append(t.c.NotEvaluated, "room on the nodes (priority class "+vmi.Spec.PriorityClassName+" may preempt pods)")
	case in.Pods == nil:
		t.unknown = "room on the nodes (no pod cache)"
	case sourcePod == nil:
		t.unknown = "room on the nodes (the VMI's virt-launcher pod on " + orUnknown(t.source) + " is not known)"
	}
	if w := settings.WorkloadsPlacement(in.KubeVirt); w != nil {
		t.kvSel = w.NodeSelector
		t.kvLabels = flatten(t.kvSel)
	}
	if in.CurrentHash != "" && in.Network != nil && in.Network.Hash == in.CurrentHash {
		t.clusterNetwork = in.Network.ClusterNetwork
		if t.clusterNetwork != "" {
			// A network of no cluster network (a macvlan over a named NIC) asks no label of its nodes.
			t.clusterNetworkLabel = settings.ClusterNetworkLabelPrefix + t.clusterNetwork
		}
		t.notAttached, t.network = in.Network.NotAttached, in.Network.Network
	}
	t.newPathCheck(in)
	return t, ""
}

// podRequests is the scheduler's total of what pod requests (PodRequests), read-only. A pod of
// one container and nothing else (what TrimPod leaves in the pod cache) requests what that
// container does, so its requests are returned as they are, without summing them into a new list.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	if s := &pod.Spec; len(s.Containers) == 1 && len(s.InitContainers) == 0 && s.Overhead == nil && s.Resources == nil {
		return s.Containers[0].Resources.Requests
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// verdict is one node's: the first check it fails (numStages when none) and, within that check,
// which taint, label (index into sel) or resource.
type nodeVerdict struct {
	stage stage
	taint corev1.Taint
	label int
	res   corev1.ResourceName
	free  int64  // for stageRoom: what the node has free of res, in amount units
	why   string // for stageNotAttached: the network controller's reason (NotRolled, NoIP, ...)
}

// judge runs the checks on n.
func (t *target) judge(n *corev1.Node) nodeVerdict {
	switch {
	case n.Name == t.source && t.source != "":
		return nodeVerdict{stage: stageSource}
	case slices.Contains(t.occupied, n.Name):
		return nodeVerdict{stage: stageOccupied}
	case !nodeReady(n):
		return nodeVerdict{stage: stageReady}
	case n.Spec.Unschedulable && !tolerates(t.c.Tolerations, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule):
		// The scheduler's NodeUnschedulable filter.
		return nodeVerdict{stage: stageCordoned}
	}
	if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(n.Spec.Taints, t.c.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}); bad {
		return nodeVerdict{stage: stageTaint, taint: taint}
	}
	for i, r := range t.c.Selector {
		if got, ok := n.Labels[r.Key]; !ok || got != r.Value {
			return nodeVerdict{stage: stageSelector, label: i}
		}
	}
	if !t.matchAffinity(n) {
		return nodeVerdict{stage: stageAffinity}
	}
	switch {
	case !eligible(n, t.kvLabels):
		return nodeVerdict{stage: stageVirtHandler}
	case t.clusterNetwork != "" && n.Labels[t.clusterNetworkLabel] != "true":
		return nodeVerdict{stage: stageClusterNetwork}
	case t.notAttached[n.Name] != "":
		return nodeVerdict{stage: stageNotAttached, why: t.notAttached[n.Name]}
	}
	if t.requests != nil {
		alloc, used := allocOf(n), t.pods.Usage(n.Name)
		if res, free, ok := fits(t.demand, &alloc, &used); !ok {
			return nodeVerdict{stage: stageRoom, res: res, free: free}
		}
	}
	return nodeVerdict{stage: numStages}
}

// confirm is judge for node i of ix, which the index's bit sets let through and which so already
// passed every check they express (the VMI's other pods' nodes included): it checks room and,
// unless affinityDone, the required node affinity.
func (t *target) confirm(ix *nodeIndex, i int, affinityDone bool) bool {
	if t.requests != nil && ix.lacksRoom(i, t.pods, t.need) {
		return false
	}
	if !affinityDone && !t.matchAffinity(ix.nodes[i]) {
		return false
	}
	return t.requests == nil || ix.hasRoom(i, t.pods, t.demand)
}

// matchAffinity is the scheduler's required node affinity test (a term that fails to parse
// matches nothing).
func (t *target) matchAffinity(n *corev1.Node) bool {
	if !t.affinityParsed {
		t.affinity = nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: corev1.PodSpec{Affinity: t.c.Affinity}})
		t.affinityParsed = true
	}
	ok, err := t.affinity.Match(n)
	return ok && err == nil
}

func tolerates(tols []corev1.Toleration, key string, effect corev1.TaintEffect) bool {
	return tolerated(tols, &corev1.Taint{Key: key, Effect: effect})
}

// tolerated is the scheduler's TaintToleration test of one taint.
func tolerated(tols []corev1.Toleration, taint *corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(tols, taint)
}

// node returns the node named name ("" or not found: nil), through the index when there is one.
func (in *CreateInput) node(name string) *corev1.Node {
	if name == "" {
		return nil
	}
	if in.index != nil {
		if i, ok := in.index.position(name); ok {
			return in.index.nodes[i]
		}
		return nil
	}
	for _, n := range in.Nodes {
		if n != nil && n.Name == name {
			return n
		}
	}
	return nil
}

// demand is what the target pod requests of one resource, in amount units.
type demand struct {
	name corev1.ResourceName
	slot int // see slot
	want int64
}

// appendDemand appends to out what req asks for, in the scheduler's order (cpu, memory,
// ephemeral-storage, then the others by name), leaving out zero requests, which the scheduler does
// not check.
func appendDemand(out []demand, req corev1.ResourceList) []demand {
	start := len(out)
	for _, n := range [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := req[n]; ok && !q.IsZero() {
			out = append(out, demand{n, slot(n), amount(n, q)})
		}
	}
	if len(req) == len(out)-start {
		return out // no other resource (each fixed one requested, none zero)
	}
	fixed := len(out)
	for n, q := range req {
		if slot(n) < 0 && !q.IsZero() {
			out = append(out, demand{n, -1, amount(n, q)})
		}
	}
	slices.SortFunc(out[fixed:], func(a, b demand) int { return strings.Compare(string(a.name), string(b.name)) })
	return out
}

// nodeAlloc is a node's allocatable resources in amount units.
type nodeAlloc struct {
	pods    int64
	hasPods bool
	res     amounts
}

func allocOf(n *corev1.Node) nodeAlloc {
	a := nodeAlloc{res: amountsOf(n.Status.Allocatable)}
	if q, ok := n.Status.Allocatable[corev1.ResourcePods]; ok {
		a.pods, a.hasPods = q.Value(), true
	}
	return a
}

// fits is the scheduler's NodeResourcesFit filter (fitsRequest): one more pod within the node's
// allocatable pod count, then every resource the pod requests within allocatable minus what the
// node's pods request. It returns the first resource that does not fit and how much of it the
// node has free.
func fits(d []demand, alloc *nodeAlloc, used *NodeUsage) (corev1.ResourceName, int64, bool) {
	if alloc.hasPods && int64(used.Pods)+1 > alloc.pods {
		return corev1.ResourcePods, alloc.pods - int64(used.Pods), false
	}
	for _, r := range d {
		free := alloc.res.get(r.name, r.slot) - used.Requests.get(r.name, r.slot)
		if r.want > free {
			return r.name, free, false
		}
	}
	return "", 0, true
}

// group counts the nodes that failed the same check for the same taint, label or resource.
type group struct {
	v     nodeVerdict
	count int
}

func (g *group) same(v nodeVerdict) bool {
	if g.v.stage != v.stage {
		return false
	}
	switch v.stage {
	case stageTaint:
		return g.v.taint.Key == v.taint.Key && g.v.taint.Value == v.taint.Value && g.v.taint.Effect == v.taint.Effect
	case stageSelector:
		return g.v.label == v.label
	case stageRoom:
		return g.v.res == v.res
	case stageNotAttached:
		return g.v.why == v.why
	}
	return true
}

// feasibility is the target search's outcome, shared by feasibleTarget and pathHealthy.
type feasibility struct {
	done bool
	// fld and msg are feasibleTarget's denial, "" when some node is otherwise feasible;
	// notEvaluated the VMI's constraints the search did not evaluate.
	fld, msg     string
	notEvaluated []string
	// pin is the node spec.addedNodeSelector pins the target to by kubernetes.io/hostname
	// (target.addedPin), "" when none.
	pin string
	// pathsOn: the paths were judged (pathCheck on), at now; paths is what was found.
	pathsOn bool
	now     time.Time
	paths   pathFindings
}

// feasible runs the target search once per evaluation (EvaluateCreate clears feas) and returns it.
func (in *CreateInput) feasible() *feasibility {
	if !in.feas.done {
		in.feas = search(in)
		in.feas.done = true
	}
	return &in.feas
}

// infeasible returns, when no node can take the target pod, the field to blame and a message with
// the node count per reason; else "", "" and the VMI's constraints it did not evaluate.
func infeasible(in *CreateInput) (fld, msg string, notEvaluated []string) {
	f := search(in)
	return f.fld, f.msg, f.notEvaluated
}

// search finds whether a node can take the target pod: when none can, feasibleTarget's field and
// message with the node count per reason. With pathHealthy on, the targets whose path from the
// source fails are dropped, and a node that is feasible but for its path does not make the denial
// (pathHealthy speaks instead). With the node index it stops at the first feasible node without
// walking the others, but for the few whose path is in doubt.
func search(in *CreateInput) feasibility {
	t, conflict := newTarget(in)
	if conflict != "" {
		return feasibility{fld: fieldAddedNodeSelector, msg: conflict}
	}
	return searchTarget(in, t, false)
}

// searchTarget is search for t, newTarget's target of in; with keepAll it lists every feasible
// target whose path from the source is unverified (f.paths.allUnverified), not only the first three.
func searchTarget(in *CreateInput, t *target, keepAll bool) (f feasibility) {
	f.paths.keepAll = keepAll
	f.pathsOn, f.now = t.paths.on, t.paths.now
	f.pin, _ = t.addedPin()
	if in.index != nil && in.index.search(t, &f.paths) {
		f.notEvaluated = t.c.NotEvaluated
		return f
	}
	f.paths = pathFindings{keepAll: keepAll}
	var groups []group
	total, found := 0, false
	for i, n := range in.Nodes {
		if n == nil {
			continue
		}
		total++
		v := t.judge(n)
		if v.stage == numStages {
			if !t.paths.on {
				f.notEvaluated = t.c.NotEvaluated
				return f
			}
			if t.paths.isBroken(n.Name) {
				f.paths.failing.add(i)
				continue
			}
			if !found {
				found, f.paths.anyTarget = true, i
				if !t.paths.sourceFresh {
					f.paths.sourceUnusable, f.paths.failing = true, firstThree{}
					f.notEvaluated = t.c.NotEvaluated
					return f
				}
			}
			if st, _, _ := t.paths.h.Pair(t.source, n.Name, t.paths.now); st == health.PathUnverified {
				f.paths.addUnverified(i)
			}
			continue
		}
		if found || f.paths.failing.n > 0 {
			continue // a target is known: the reasons of the others are not counted
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.same(v) })
		if i < 0 {
			groups = append(groups, group{v: v})
			i = len(groups) - 1
		}
		groups[i].count++
		if v.stage == stageRoom && v.free > groups[i].v.free {
			groups[i].v.free = v.free // the most any node of the group has free
		}
	}
	if found || f.paths.failing.n > 0 {
		if found {
			f.paths.failing = firstThree{} // only dropped: another target is left
		}
		f.notEvaluated = t.c.NotEvaluated
		return f
	}
	f.fld, f.msg = t.explain(in, groups, total)
	return f
}

// explain writes the denial: the node count per reason, most nodes first, and what to do about
// the largest reason that is not the source node.
func (t *target) explain(in *CreateInput, groups []group, total int) (string, string) {
	slices.SortStableFunc(groups, func(a, b group) int {
		if a.count != b.count {
			return b.count - a.count
		}
		return int(a.v.stage) - int(b.v.stage)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "no node can receive VirtualMachineInstance %s/%s: 0 of %d %s can take its target pod", in.VMI.Namespace, in.VMI.Name, total, settings.Plural(total, "node", "nodes"))
	var top *group
	for i := range groups {
		g := &groups[i]
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + t.reason(g))
		if top == nil && g.v.stage != stageSource {
			top = g
		}
	}
	if host, ok := t.addedPin(); ok {
		// Pinned to one node, as Harvester's migrate action pins it: that node's reason is the
		// answer, not the count of the others, which all lack its hostname.
		b.Reset()
		fmt.Fprintf(&b, "no node can receive VirtualMachineInstance %s/%s: %s", in.VMI.Namespace, in.VMI.Name, t.pinned(in, host))
		if notEvaluated := t.notEvaluated(); len(notEvaluated) > 0 {
			b.WriteString(" (not evaluated: " + strings.Join(notEvaluated, ", ") + ")")
		}
		return fieldAddedNodeSelector, b.String()
	}
	if top == nil {
		b.WriteString("; a migration never targets its source node: add a node that can run the VMI")
		return fieldVMIName, b.String()
	}
	b.WriteString("; " + t.hint(top))
	if notEvaluated := t.notEvaluated(); len(notEvaluated) > 0 {
		b.WriteString(" (not evaluated: " + strings.Join(notEvaluated, ", ") + ")")
	}
	if top.v.stage == stageSelector && t.c.Selector[top.v.label].Why == targetpod.WhyAdded {
		return fieldAddedNodeSelector, b.String()
	}
	return fieldVMIName, b.String()
}

// reason words one group: "2 have taint dedicated=db:NoSchedule that the VMI does not tolerate".
func (t *target) reason(g *group) string {
	n := g.count
	verb := func(one, many string) string { return fmt.Sprintf("%d %s", n, settings.Plural(n, one, many)) }
	switch g.v.stage {
	case stageSource:
		return fmt.Sprintf("%s its source node %s", verb("is", "are"), t.source)
	case stageOccupied:
		return verb("runs", "run") + " another pod of the VMI (KubeVirt's target pod anti-affinity)"
	case stageReady:
		return verb("is", "are") + " not Ready"
	case stageCordoned:
		return verb("is", "are") + " cordoned"
	case stageTaint:
		tt := g.v.taint
		return fmt.Sprintf("%s taint %s that the VMI does not tolerate", verb("has", "have"), taintString(tt))
	case stageSelector:
		r := t.c.Selector[g.v.label]
		return fmt.Sprintf("%s label %s=%s (%s)", verb("lacks", "lack"), r.Key, r.Value, r.Why)
	case stageAffinity:
		return verb("does", "do") + " not match the VMI's required node affinity"
	case stageVirtHandler:
		if len(t.kvSel) > 0 {
			return verb("does", "do") + " not run virt-handler (a witness node, or without labels " + formatSelector(t.kvSel) + " of the KubeVirt CR's spec.workloads.nodePlacement.nodeSelector)"
		}
		return verb("does", "do") + " not run virt-handler (a witness node)"
	case stageClusterNetwork:
		return fmt.Sprintf("%s not carry the cluster network %s (label %s=true)", verb("does", "do"), t.clusterNetwork, t.clusterNetworkLabel)
	case stageNotAttached:
		return fmt.Sprintf("%s no virt-handler on the migration network %s yet (%s)", verb("has", "have"), t.network, g.v.why)
	case stageRoom:
		want := t.requests[g.v.res]
		if g.v.res == corev1.ResourcePods {
			return verb("has", "have") + " no room for another pod (allocatable pods)"
		}
		q := quantity(g.v.res, g.v.free)
		free := "it has " + q.String() + " free"
		if n > 1 {
			free = "the most any has free is " + q.String()
		}
		return fmt.Sprintf("%s too little %s free (the target pod requests %s; %s)", verb("has", "have"), g.v.res, want.String(), free)
	}
	return ""
}

// hint says what to do about the group that keeps the most nodes out.
func (t *target) hint(g *group) string {
	switch g.v.stage {
	case stageOccupied:
		return "wait until the VMI's earlier target pod is gone"
	case stageReady:
		return "retry when another node is Ready"
	case stageCordoned:
		return "uncordon a node (kubectl uncordon <node>) or retry when one is schedulable"
	case stageTaint:
		return fmt.Sprintf("remove the taint from a node (kubectl taint node <node> %s-) or add a matching toleration to the VMI's spec.tolerations", taintString(g.v.taint))
	case stageSelector:
		r := t.c.Selector[g.v.label]
		if r.Key == corev1.LabelHostname {
			return pinHint(r.Why, r.Value)
		}
		switch r.Why {
		case targetpod.WhySchedulable:
			return "virt-handler labels a node " + r.Key + "=" + r.Value + " when it can run VMs: retry when another one is"
		case targetpod.WhyAdded:
			return "change spec.addedNodeSelector or label another node to match it"
		case "the VMI's nodeSelector":
			return "label another node to match the VMI's nodeSelector"
		}
		return fmt.Sprintf("the target pod needs a node labelled %s=%s: add one, or change %s", r.Key, r.Value, r.Why)
	case stageAffinity:
		return "change the VMI's spec.affinity or label another node to match it"
	case stageVirtHandler:
		return "virt-handler, which receives migrations, runs on none of them"
	case stageClusterNetwork:
		return fmt.Sprintf("attach another node to the cluster network %s or change the setting %s", t.clusterNetwork, v1beta1.MigrationNetwork)
	case stageNotAttached:
		return fmt.Sprintf("retry when the setting %s lists another node with an address (kubectl get setting %s -o jsonpath='{.status.nodes}')", v1beta1.MigrationNetwork, v1beta1.MigrationNetwork)
	case stageRoom:
		return "free " + string(g.v.res) + " on a node or add a node"
	}
	return ""
}

// addedPin returns the value spec.addedNodeSelector gives kubernetes.io/hostname in the target
// pod's selector: the one node the migration is pinned to, which is how Harvester's migrate action
// names its target. false when the migration pins no node (or the VMI's own selector sets the key).
func (t *target) addedPin() (string, bool) {
	for _, r := range t.c.Selector {
		if r.Key == corev1.LabelHostname && r.Why == targetpod.WhyAdded {
			return r.Value, true
		}
	}
	return "", false
}

// pinned says why the node a migration is pinned to (addedPin) cannot take the target pod, and
// where to see the others: "spec.addedNodeSelector pins the target to kubernetes.io/hostname=node-2,
// one node, and node-2 is not Ready; name another node there or drop the key (migranet preflight
// ...)". The node is found by its label, as the scheduler finds it, not by its name.
func (t *target) pinned(in *CreateInput, host string) string {
	var parts []string
	for _, n := range in.Nodes {
		if n == nil || n.Labels[corev1.LabelHostname] != host {
			continue
		}
		if v := t.judge(n); v.stage != numStages {
			parts = append(parts, n.Name+" "+t.nodeReason(v))
		} else {
			parts = append(parts, n.Name+" could take it") // not reached: a feasible node is no denial
		}
	}
	what := "no node carries that label"
	if len(parts) > 0 {
		what = strings.Join(parts, "; ")
	}
	return fmt.Sprintf("spec.addedNodeSelector pins the target to %s=%s, one node, and %s; name another node there or drop the key (%s)",
		corev1.LabelHostname, host, what, preflightHint(in.VMI))
}

// nodeReason words one node's verdict (not numStages) after its name.
func (t *target) nodeReason(v nodeVerdict) string {
	if v.stage == stageSource {
		return "is the node the VMI runs on"
	}
	g := group{v: v, count: 1}
	return strings.TrimPrefix(t.reason(&g), "1 ")
}

// preflightHint says how to see every node's verdict.
func preflightHint(vmi *kubevirtv1.VirtualMachineInstance) string {
	return fmt.Sprintf("migranet preflight -n %s %s lists the nodes that can take it and why the others cannot", vmi.Namespace, vmi.Name)
}

// pinHint is the hint for a selector on kubernetes.io/hostname, which names one node: labelling
// another node to match would give it that node's hostname, so the way out is the pin itself. A
// pin by spec.addedNodeSelector is explained by pinned instead.
func pinHint(why, host string) string {
	switch why {
	case "the VMI's nodeSelector":
		return fmt.Sprintf("the VMI's nodeSelector pins it to %s=%s, one node, so it cannot move: drop or change the pin "+
			"(the VM's spec.template.spec.nodeSelector; it applies when the VMI restarts), never give another node that hostname", corev1.LabelHostname, host)
	}
	return fmt.Sprintf("%s pins the target pod to %s=%s, one node: drop or change the pin", why, corev1.LabelHostname, host)
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

func (t *target) notEvaluated() []string {
	if t.unknown == "" {
		return t.c.NotEvaluated
	}
	return append(slices.Clip(t.c.NotEvaluated), t.unknown)
}
