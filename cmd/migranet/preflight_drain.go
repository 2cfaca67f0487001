package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// drainCluster is what the drain plan reads of the cluster, once.
type drainCluster struct {
	node     *corev1.Node
	vmis     []kubevirtv1.VirtualMachineInstance // all namespaces
	vmims    []kubevirtv1.VirtualMachineInstanceMigration
	kubevirt *kubevirtv1.KubeVirt
	metrics  *drainplan.Metrics
	// harvester: Harvester's migrate action is there (its words are added to the notes).
	harvester bool
}

// onNode returns the VMIs running on the drained node, by namespace and name.
func (d *drainCluster) onNode() []*kubevirtv1.VirtualMachineInstance {
	var out []*kubevirtv1.VirtualMachineInstance
	for i := range d.vmis {
		if v := &d.vmis[i]; v.Status.NodeName == d.node.Name {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *kubevirtv1.VirtualMachineInstance) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// vmi returns the VMI namespace/name, nil when there is none.
func (d *drainCluster) vmi(ns, name string) *kubevirtv1.VirtualMachineInstance {
	for i := range d.vmis {
		if d.vmis[i].Namespace == ns && d.vmis[i].Name == name {
			return &d.vmis[i]
		}
	}
	return nil
}

// planState is the migrationcheck.State the plan judges every VMI on: the API reads made once
// (nodes, pods, the KubeVirt CR, the settings, the paths), and the target pods of the migrations
// planned so far added to the pods, so that room is judged as the drain will find it.
type planState struct {
	*migrationcheck.APIState
	d        *drainCluster
	nodes    *migrationcheck.NodeSet
	pods     migrationcheck.PodList
	planned  migrationcheck.PodList
	settings *migrationcheck.SettingsView
	paths    *health.PathHealth
}

// Traffic implements migrationcheck.State: none. The plan queues the drain's migrations behind
// the inbound limits itself (drainplan.Simulate), as rule inboundSlot's refusals queue KubeVirt's
// evacuation; judging each VMI against the slots in use now would call a wait a block.
func (s *planState) Traffic(context.Context) (*migrationcheck.Traffic, error) { return nil, nil }

func newPlanState(ctx context.Context, api *migrationcheck.APIState, d *drainCluster) (*planState, error) {
	st := &planState{APIState: api, d: d}
	var err error
	if st.nodes, err = api.Nodes(ctx); err != nil {
		return nil, err
	}
	pv, err := api.Pods(ctx)
	if err != nil {
		return nil, err
	}
	if l, ok := pv.(migrationcheck.PodList); ok {
		st.pods = l
	}
	if st.settings, err = api.Settings(ctx); err != nil {
		return nil, err
	}
	st.paths = api.Paths(ctx)
	return st, nil
}

// VMI implements migrationcheck.State from the VMIs listed once.
func (s *planState) VMI(_ context.Context, namespace, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	return s.d.vmi(namespace, name), nil
}

// MigrationsOf implements migrationcheck.State from the migrations listed once.
func (s *planState) MigrationsOf(_ context.Context, namespace, vmiName string) ([]*kubevirtv1.VirtualMachineInstanceMigration, error) {
	var out []*kubevirtv1.VirtualMachineInstanceMigration
	for i := range s.d.vmims {
		if m := &s.d.vmims[i]; m.Namespace == namespace && m.Spec.VMIName == vmiName {
			out = append(out, m)
		}
	}
	return out, nil
}

// KubeVirt implements migrationcheck.State.
func (s *planState) KubeVirt(context.Context) (*kubevirtv1.KubeVirt, error) { return s.d.kubevirt, nil }

// Settings implements migrationcheck.State.
func (s *planState) Settings(context.Context) (*migrationcheck.SettingsView, error) {
	return s.settings, nil
}

// Paths implements migrationcheck.State: the path health read once.
func (s *planState) Paths(context.Context) *health.PathHealth { return s.paths }

// Nodes implements migrationcheck.State.
func (s *planState) Nodes(context.Context) (*migrationcheck.NodeSet, error) { return s.nodes, nil }

// Pods implements migrationcheck.State: the active pods and the planned target pods; nil when
// the pods could not be listed (room is then not judged, and admission says so).
func (s *planState) Pods(context.Context) (migrationcheck.PodView, error) {
	if s.pods == nil {
		return nil, nil
	}
	return append(slices.Clip(s.pods), s.planned...), nil
}

// evacuationMigration is the migration KubeVirt's evacuation controller creates for vmi
// (GenerateNewMigration, pkg/virt-controller/watch/drain/evacuation): annotated as an
// evacuation of node, created by virt-controller.
func evacuationMigration(vmi *kubevirtv1.VirtualMachineInstance, node string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, GenerateName: "kubevirt-evacuation-",
			Annotations: map[string]string{kubevirtv1.EvacuationMigrationAnnotation: node}},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
}

// planDrain judges every VMI on the node as the drain would meet it, in name order, and
// schedules the migrations.
func planDrain(ctx context.Context, api *migrationcheck.APIState, d *drainCluster) (*drainplan.Plan, error) {
	st, err := newPlanState(ctx, api, d)
	if err != nil {
		return nil, err
	}
	opts := drainplan.OptionsFrom(d.kubevirt)
	thr := drainplan.NewThroughputs(finishedMigrations(d), opts)
	addLive(thr, d)
	setup, finish, overheads := thr.Overheads()
	p := &drainplan.Plan{Node: d.node.Name, Options: opts, Overheads: overheads, Metrics: d.metrics.Describe()}
	var clusterStrategy *kubevirtv1.EvictionStrategy
	if d.kubevirt != nil {
		clusterStrategy = d.kubevirt.Spec.Configuration.EvictionStrategy
	}
	creator := settings.MigrationCreator(evacuationMigration(&kubevirtv1.VirtualMachineInstance{}, d.node.Name), api.KubeVirtNamespace)
	limits := drainplan.Limits{Outbound: opts.ParallelOutboundPerNode, Cluster: opts.ParallelPerCluster, Elsewhere: runningElsewhere(d)}
	budget := st.budget(d.kubevirt)
	var targets []string
	for _, vmi := range d.onNode() {
		v, pod := planVMI(ctx, st, d, vmi, clusterStrategy, creator, thr, opts, budget, limits.Slots())
		p.Add(v, setup, finish)
		if pod != nil {
			st.planned = append(st.planned, pod)
			targets = append(targets, v.Target)
		}
	}
	if budget != nil {
		limits.Inbound = budget.Inbound
		p.Inbound = budget.Words(targets)
	}
	p.Finish(limits)
	return p, nil
}

// budget is the migration policy's per-node budget as the drain meets it, nil without one:
// each node's by its labels, its inbound limit with the KubeVirt CR's limits.
func (s *planState) budget(kv *kubevirtv1.KubeVirt) *drainplan.Budget {
	if s.settings == nil || s.settings.Policy == nil || s.settings.Policy.Budget == nil || s.nodes == nil {
		return nil
	}
	// Each node's budget once: the schedule asks for inbound limits over every order it tries.
	b, limits := s.settings.Policy.Budget, settings.MigrationLimitsOf(kv)
	bandwidth, inbound := make(map[string]int64, len(s.nodes.Nodes)), make(map[string]int, len(s.nodes.Nodes))
	for _, n := range s.nodes.Nodes {
		if nb := b.For(n.Labels); nb.Bandwidth > 0 {
			bandwidth[n.Name], inbound[n.Name] = nb.Bandwidth, limits.InboundLimit(nb)
		}
	}
	return &drainplan.Budget{
		Bandwidth: func(node string) int64 { return bandwidth[node] },
		Inbound:   func(node string) int { return inbound[node] },
	}
}

// planVMI judges one VMI; it returns its part and, when it moves, its target pod as placed.
func planVMI(ctx context.Context, st *planState, d *drainCluster, vmi *kubevirtv1.VirtualMachineInstance, clusterStrategy *kubevirtv1.EvictionStrategy,
	creator string, thr *drainplan.Throughputs, opts drainplan.Options, budget *drainplan.Budget, slots int) (drainplan.VMIPlan, *corev1.Pod) {
	mem := drainplan.GuestMemory(vmi)
	dirty, dirtyFrom := d.metrics.Dirty(vmi.Namespace + "/" + vmi.Name)
	v := drainplan.VMIPlan{Namespace: vmi.Namespace, Name: vmi.Name, Memory: mem.Value(), Dirty: dirty, DirtyFrom: dirtyFrom}
	if note := drainplan.StorageNote(vmi); note != "" {
		v.Notes = append(v.Notes, note)
	}
	if d.harvester {
		if why := harvestermode.NotMigratable(vmi); why != "" {
			v.Notes = append(v.Notes, "Harvester's migrate action refuses it: "+why)
		}
	}
	e := drainplan.EvictionOf(vmi, clusterStrategy)
	v.Verdict, v.EvictionStrategy, v.Why = e.Verdict, e.Strategy, e.Why
	if !e.Migrates {
		v.Category = evictionCategory(e)
		return v, nil
	}
	vmim := evacuationMigration(vmi, d.node.Name)
	in, err := migrationcheck.GatherCreate(ctx, st, vmim, creator)
	if err != nil {
		v.Verdict, v.Category, v.Why = drainplan.Blocks, drainplan.CatAdmission, "its migration could not be judged: "+err.Error()
		return v, nil
	}
	ds := migrationcheck.EvaluateCreate(*in)
	warnings, refusal := migrationcheck.Answer(vmim, ds, false)
	v.Warnings = warnings
	nodes := migrationcheck.TargetNodes(in)
	if refusal != nil {
		r := drainplan.Refusal{Text: refusal.Error()}
		for _, dec := range ds {
			if dec.Deny {
				r.Rules = append(r.Rules, dec.Rule)
			}
		}
		r.Pinned = drainplan.PinnedBySelector(r.Text)
		v.Verdict, v.Category = drainplan.Blocks, r.Category()
		v.Why = "migranet's admission refuses its evacuation migration, so the drain cannot complete: " + r.Text
		return v, nil
	}
	sourcePod := launcherPod(st.pods, vmi)
	steering := migrationcheck.Steer(in)
	pod := targetPod(vmi, sourcePod)
	steering.Apply(pod)
	usage := drainplan.UsageOf(append(slices.Clip(st.pods), st.planned...))
	var cands []drainplan.Candidate
	path := map[string]string{}
	for _, n := range nodes {
		if n.Fits {
			if node := nodeNamed(st.nodes.Nodes, n.Node); node != nil {
				cands = append(cands, drainplan.Candidate{Node: node, Usage: usage[n.Node]})
				path[n.Node] = n.Path
			}
		}
	}
	choice := drainplan.Choose(pod, cands)
	if choice.Node == "" {
		v.Verdict, v.Category = drainplan.Blocks, drainplan.CatNoTarget
		v.Why = "no node can take its target pod (" + steering.NoTarget + "): the drain cannot complete"
		return v, nil
	}
	v.Target, v.Ties, v.Path = choice.Node, choice.Ties, path[choice.Node]
	if len(choice.Ties) > 0 {
		v.Notes = append(v.Notes, "the scheduler scores "+choice.Node+" and "+strings.Join(choice.Ties, ", ")+" alike and picks one at random; the time assumes "+choice.Node)
	}
	m := budget.Capped(thr.Path(d.node.Name, choice.Node), d.node.Name, choice.Node, slots)
	v.Throughput = &m
	est := drainplan.EstimateStream(v.Memory, dirty, m.BytesPerSecond, opts)
	v.Estimate = &est
	if est.Outcome == drainplan.Aborted {
		v.Verdict, v.Category = drainplan.Blocks, drainplan.CatCannotConverge
		v.Why = fmt.Sprintf("dirty rate %s against %s to %s: %s; the evacuation retries it and the drain cannot complete",
			drainplan.Rate(dirty), drainplan.Rate(m.BytesPerSecond), choice.Node, est.Words())
		return v, nil
	}
	placed := pod.DeepCopy()
	placed.Name, placed.Spec.NodeName = "planned-"+vmi.Name, choice.Node
	return v, placed
}

func evictionCategory(e drainplan.Eviction) string {
	switch {
	case e.Verdict == drainplan.Skipped:
		return drainplan.CatNotRunning
	case e.Strategy == "":
		return drainplan.CatNoStrategy
	case e.Strategy == string(kubevirtv1.EvictionStrategyNone):
		return drainplan.CatEvictionNone
	case e.Strategy == string(kubevirtv1.EvictionStrategyExternal):
		return drainplan.CatExternal
	}
	return drainplan.CatNotMigratable
}

// launcherPod is vmi's virt-launcher pod on its node, nil when not among pods.
func launcherPod(pods migrationcheck.PodList, vmi *kubevirtv1.VirtualMachineInstance) *corev1.Pod {
	for _, p := range pods.OfVMI(vmi.UID) {
		if p.Spec.NodeName == vmi.Status.NodeName && p.Labels[kubevirtv1.AppLabel] == "virt-launcher" {
			return p
		}
	}
	return nil
}

// targetPod is what the scheduler scores of the migration's target pod: the VMI's affinity and
// tolerations (KubeVirt carries them over) and the source pod's requests (the VMI's memory when
// the pod is not known).
func targetPod(vmi *kubevirtv1.VirtualMachineInstance, source *corev1.Pod) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace,
		Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(vmi.UID)}}}
	if vmi.Spec.Affinity != nil {
		pod.Spec.Affinity = vmi.Spec.Affinity.DeepCopy()
	}
	pod.Spec.Tolerations = vmi.Spec.Tolerations
	if source != nil {
		for _, c := range source.Spec.Containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.Name, Resources: *c.Resources.DeepCopy()})
		}
	} else {
		pod.Spec.Containers = []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: drainplan.GuestMemory(vmi)}}}}
	}
	return pod
}

func nodeNamed(nodes []*corev1.Node, name string) *corev1.Node {
	for _, n := range nodes {
		if n != nil && n.Name == name {
			return n
		}
	}
	return nil
}

// finishedMigrations are the cluster's Succeeded migrations whose VMI still tells its memory.
func finishedMigrations(d *drainCluster) []drainplan.Finished {
	var out []drainplan.Finished
	for i := range d.vmims {
		m := &d.vmims[i]
		vmi := d.vmi(m.Namespace, m.Spec.VMIName)
		dirty := int64(0)
		if vmi != nil {
			dirty, _ = d.metrics.Dirty(vmi.Namespace + "/" + vmi.Name)
		}
		if f, ok := drainplan.FinishedFrom(m, vmi, dirty); ok {
			out = append(out, f)
		}
	}
	return out
}

// addLive records the throughput KubeVirt reports of each migration streaming now, by its path.
func addLive(t *drainplan.Throughputs, d *drainCluster) {
	for i := range d.vmis {
		v := &d.vmis[i]
		ms := v.Status.MigrationState
		if ms == nil || ms.Completed || ms.Failed || ms.StartTimestamp == nil || ms.SourceNode == "" || ms.TargetNode == "" {
			continue
		}
		if rate, _, _, from, ok := d.metrics.Streaming(v.Namespace+"/"+v.Name, string(v.UID)); ok && rate > 0 {
			t.Live[[2]string{ms.SourceNode, ms.TargetNode}] = drainplan.Measured{BytesPerSecond: rate,
				From: fmt.Sprintf("%s of %s/%s's migration streaming on this path now", from, v.Namespace, v.Name)}
		}
	}
}

// runningElsewhere counts the migrations running now (KubeVirt's IsRunning) whose VMI is not on
// the drained node: they hold parallelMigrationsPerCluster slots.
func runningElsewhere(d *drainCluster) int {
	n := 0
	for i := range d.vmims {
		m := &d.vmims[i]
		if !m.IsRunning() {
			continue
		}
		if vmi := d.vmi(m.Namespace, m.Spec.VMIName); vmi == nil || vmi.Status.NodeName != d.node.Name {
			n++
		}
	}
	return n
}

// printPlan writes the plan and returns the exit status.
func printPlan(w io.Writer, p *drainplan.Plan, format string) (int, error) {
	if err := p.Print(w, format); err != nil {
		return drainplan.ExitError, err
	}
	return p.Exit, nil
}
