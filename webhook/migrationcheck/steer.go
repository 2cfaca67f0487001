package migrationcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// SteeringAnnotation on a migration target pod holds, as JSON, what migranet's steering added to
// it and why (Steering).
const SteeringAnnotation = "migranet.io/steering"

// Reasons of an Exclusion.
const (
	// ExcludedPathFailing: the path between the source and the node fails in a fresh probe report.
	ExcludedPathFailing = "PathFailing"
	// ExcludedNotAttached: the node's virt-handler is not on the current migration network.
	ExcludedNotAttached = "NotAttached"
)

// maxPreferred bounds the nodes a preferred term names: past it the preference is left out (a
// source whose paths to most nodes are unverified has nothing to prefer).
const maxPreferred = 100

// Exclusion is one node a migration's target pod is kept off, and why.
type Exclusion struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Steering is what migranet adds to one migration target pod so that the scheduler places it
// only where the migration can run: required node affinity that excludes nodes (ANDed into every
// term the pod has) and preferred terms that favour verified paths.
type Steering struct {
	// Migration and Source are the VMIM's name and the VMI's node.
	Migration string `json:"migration"`
	Source    string `json:"source"`
	// Excluded are the nodes the pod may not land on: behind a failing path (pathHealthy enforce)
	// or not on the migration network.
	Excluded []Exclusion `json:"excluded,omitempty"`
	// Avoided are the nodes behind a failing path when pathHealthy is in warn mode: preferred
	// against, not excluded.
	Avoided []Exclusion `json:"avoided,omitempty"`
	// Unverified are the feasible targets whose path from the source is not verified yet (never
	// probed, stale): missing data never excludes, but verified targets are preferred over them.
	Unverified []string `json:"unverified,omitempty"`
	// AtInboundLimit are the nodes into which as many migrations stream as their budget's inbound
	// limit lets (the policy's budget): preferred against, never excluded.
	AtInboundLimit []Exclusion `json:"atInboundLimit,omitempty"`
	// SpreadFrom are the other migrations whose target pods are made but not bound (their UIDs),
	// with a budget: the pod is preferred away from the nodes the scheduler puts them on
	// (SpreadTerm), so target pods made before the scheduler binds the first do not all see its
	// node free.
	SpreadFrom []string `json:"spreadFrom,omitempty"`
	// ClusterNetworkLabel, when set, is the node label (value "true") every target must carry.
	ClusterNetworkLabel string `json:"clusterNetworkLabel,omitempty"`
	// NoTarget, when set, says why no node is left for the pod: it stays Pending until KubeVirt
	// times it out and fails the migration.
	NoTarget string `json:"noTarget,omitempty"`
	// Skipped says why the pod is left as KubeVirt made it; "" when it is steered.
	Skipped string `json:"-"`
}

// IsMigrationTarget reports whether pod is a migration target virt-launcher pod as
// virt-controller creates it (createTargetPod and listMatchingTargetPods in
// pkg/virt-controller/watch/migration/migration.go, KubeVirt v1.8.4 and v1.9.0): labelled
// kubevirt.io=virt-launcher and kubevirt.io/migrationJobUID. Hotplug attachment pods carry the
// second label with another kubevirt.io value.
func IsMigrationTarget(pod *corev1.Pod) bool {
	_, job := pod.Labels[kubevirtv1.MigrationJobLabel]
	return job && pod.Labels[kubevirtv1.AppLabel] == "virt-launcher"
}

// GatherSteer builds, from st, what the steering of the migration target pod reads: the create
// input of its migration (the VMI named by the pod's kubevirt.io/domain annotation, the VMIM by
// its UID label), judged with the policy's modes (no user: exemptUsers exempt from refusals, not
// from steering). skip says why the pod is not steered ("" when it is).
func GatherSteer(ctx context.Context, st State, pod *corev1.Pod) (in *CreateInput, skip string, err error) {
	switch {
	case pod.Spec.NodeName != "":
		return nil, "already bound to a node", nil
	case pod.Annotations[SteeringAnnotation] != "":
		return nil, "already steered", nil
	}
	vmiName := pod.Annotations[kubevirtv1.DomainAnnotation]
	if vmiName == "" {
		return nil, "no " + kubevirtv1.DomainAnnotation + " annotation names its VMI", nil
	}
	// The migration as the pod names it; the cached one, when there, replaces it (GatherCreate
	// reads the VMI's migrations anyway). Not in the cache yet, the pod carries what the
	// migration added (its node selector).
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{}
	vmim.Namespace, vmim.Name, vmim.UID, vmim.Spec.VMIName = pod.Namespace, pod.Annotations[kubevirtv1.MigrationJobNameAnnotation],
		types.UID(pod.Labels[kubevirtv1.MigrationJobLabel]), vmiName
	in, err = GatherCreate(ctx, st, vmim, "") // no user: see Steer
	if err != nil {
		return nil, "", err
	}
	for _, m := range in.OtherMigrations {
		if m.UID == vmim.UID {
			in.VMIM = m
		}
	}
	if in.VMIM.Spec.Receive != nil && in.VMIM.Spec.SendTo == nil {
		return nil, "a decentralized migration's target (its source is outside the probed network)", nil
	}
	if in.VMI == nil || in.VMI.Status.NodeName == "" {
		return nil, "its VMI " + pod.Namespace + "/" + vmiName + " is not known to run on a node", nil
	}
	return in, "", nil
}

// Steer decides what the target pod of in's migration (VMI set, running) gets. The modes of the
// policy govern it: feasibleTarget (not off) keeps the pod on nodes attached to the migration
// network; pathHealthy enforce excludes the nodes behind a failing path, warn only prefers the
// others, off leaves the paths out. The nodes behind a failing path are settings.BrokenFrom's, the
// same answer admission and preflight give.
func Steer(in *CreateInput) Steering {
	s := Steering{Migration: in.VMIM.Name, Source: in.VMI.Status.NodeName}
	// The pod's creator is virt-controller whoever asked for the migration: exemptUsers exempt
	// from refusals, never from the steering, so the modes are judged for no user.
	in.User = ""
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	t, conflict := newTarget(in)
	if conflict != "" {
		s.Skipped = "its migration's spec.addedNodeSelector conflicts with the VMI's nodeSelector"
		return s
	}
	if in.Policy.Mode(settings.RuleFeasibleTarget) != settings.ModeOff {
		s.ClusterNetworkLabel = t.clusterNetworkLabel
		for _, node := range sortedKeys(t.notAttached) {
			s.Excluded = append(s.Excluded, Exclusion{Node: node, Reason: ExcludedNotAttached,
				Message: fmt.Sprintf("its virt-handler is not on the migration network %s (%s)", t.network, t.notAttached[node])})
		}
	}
	if t.paths.on {
		enforce := in.Policy.Mode(settings.RulePathHealthy) == settings.ModeEnforce
		for _, b := range in.Paths.BrokenFrom(s.Source, in.Now) {
			e := Exclusion{Node: b.Node, Reason: ExcludedPathFailing, Message: b.Fault.Message()}
			if enforce {
				s.Excluded = append(s.Excluded, e)
			} else {
				s.Avoided = append(s.Avoided, e)
			}
		}
	}
	excluded := make(map[string]bool, len(s.Excluded))
	for _, e := range s.Excluded {
		excluded[e.Node] = true
	}
	if full := AtInboundLimit(in, s.Source, excluded); len(full) <= maxPreferred {
		s.AtInboundLimit = full
	}
	s.SpreadFrom = spreadFrom(in)
	f := searchTarget(in, t, true)
	switch {
	case f.msg != "":
		s.NoTarget = f.msg
	case f.pathsOn && f.paths.failing.n > 0 && len(s.Excluded) > 0 && len(s.Avoided) == 0:
		s.NoTarget = fmt.Sprintf("every node that could take the target pod is behind a failing migration path from %s", s.Source)
	case f.pathsOn && len(f.paths.allUnverified) <= maxPreferred && !f.paths.sourceUnusable:
		for _, i := range f.paths.allUnverified {
			s.Unverified = append(s.Unverified, in.Nodes[i].Name)
		}
		slices.Sort(s.Unverified)
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Changes reports whether s adds anything to a pod.
func (s *Steering) Changes() bool {
	return s.Skipped == "" && (len(s.Excluded) > 0 || len(s.Avoided) > 0 || len(s.Unverified) > 0 || len(s.AtInboundLimit) > 0 ||
		len(s.SpreadFrom) > 0 || s.ClusterNetworkLabel != "")
}

// Apply adds s to pod's affinity. The exclusions (one matchFields metadata.name NotIn per node:
// the API server takes one value per field requirement) and the cluster network label are ANDed
// into every term of the pod's required node affinity, so nothing the VMI asks for is loosened; a
// pod without one gets a single term. An empty term, which matches no node, stays empty. The
// preferences become preferred terms: weight 100 for the verified, healthy nodes, 50 for nodes not
// behind a failing path (when some are avoided, not excluded), budgetWeight for nodes not at their
// inbound limit.
func (s *Steering) Apply(pod *corev1.Pod) {
	if !s.Changes() {
		return
	}
	var exprs []corev1.NodeSelectorRequirement
	if s.ClusterNetworkLabel != "" {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: s.ClusterNetworkLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}})
	}
	excluded := make([]string, 0, len(s.Excluded))
	for _, e := range s.Excluded {
		excluded = append(excluded, e.Node)
	}
	fields := notIn(excluded)
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if len(exprs) > 0 || len(fields) > 0 {
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0] = corev1.NodeSelectorTerm{MatchExpressions: exprs, MatchFields: fields}
		} else {
			// An empty term matches no node: adding to it would let nodes in, so it stays empty.
			terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			for i := range terms {
				if len(terms[i].MatchExpressions) > 0 || len(terms[i].MatchFields) > 0 {
					terms[i].MatchExpressions = append(terms[i].MatchExpressions, exprs...)
					terms[i].MatchFields = append(terms[i].MatchFields, fields...)
				}
			}
		}
	}
	avoided := make([]string, 0, len(s.Avoided))
	for _, e := range s.Avoided {
		avoided = append(avoided, e.Node)
	}
	if best := append(slices.Clone(avoided), s.Unverified...); len(best) > 0 {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchFields: notIn(best)}})
	}
	if len(avoided) > 0 && len(s.Unverified) > 0 {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchFields: notIn(avoided)}})
	}
	if len(s.AtInboundLimit) > 0 {
		full := make([]string, 0, len(s.AtInboundLimit))
		for _, e := range s.AtInboundLimit {
			full = append(full, e.Node)
		}
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: budgetWeight, Preference: corev1.NodeSelectorTerm{MatchFields: notIn(full)}})
	}
	if len(s.SpreadFrom) > 0 {
		if pod.Spec.Affinity.PodAntiAffinity == nil {
			pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		pa := pod.Spec.Affinity.PodAntiAffinity
		pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution, SpreadTerm(s.SpreadFrom))
	}
}

// notIn is one metadata.name NotIn requirement per node.
func notIn(nodes []string) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{n}})
	}
	return out
}

// Notable reports whether s excludes, avoids or prefers against a node, spreads from other
// target pods, or leaves none: more
// than the cluster network every target pod of a migration network is kept to.
func (s *Steering) Notable() bool {
	return len(s.Excluded) > 0 || len(s.Avoided) > 0 || len(s.Unverified) > 0 || len(s.AtInboundLimit) > 0 || len(s.SpreadFrom) > 0 || s.NoTarget != ""
}

// Summary words s in one line for the migration's event: what was excluded and why, what is
// preferred, or why no node is left.
func (s *Steering) Summary() string {
	var parts []string
	words := func(es []Exclusion) string {
		var b strings.Builder
		for i, e := range es {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(e.Node + " (" + e.Message + ")")
		}
		return b.String()
	}
	if len(s.Excluded) > 0 {
		parts = append(parts, "excluded from the targets: "+words(s.Excluded))
	}
	if len(s.Avoided) > 0 {
		parts = append(parts, "avoided, not excluded (pathHealthy is in warn mode): "+words(s.Avoided))
	}
	if len(s.Unverified) > 0 {
		parts = append(parts, "verified paths preferred over "+strings.Join(s.Unverified, ", ")+" (path from "+s.Source+" not verified yet)")
	}
	if len(s.AtInboundLimit) > 0 {
		parts = append(parts, "preferred against, at their inbound migration limit: "+words(s.AtInboundLimit))
	}
	if n := len(s.SpreadFrom); n > 0 {
		parts = append(parts, fmt.Sprintf("spread from the target %s of %d other %s being placed", settings.Plural(n, "pod", "pods"), n, settings.Plural(n, "migration", "migrations")))
	}
	if s.NoTarget != "" {
		parts = append(parts, "no node is left for it: "+s.NoTarget+"; the pod stays Pending and KubeVirt fails the migration when it times out")
	}
	msg := "target pod of migration " + s.Migration + " from " + s.Source + ": " + strings.Join(parts, "; ")
	return msg
}
