package migrationcheck

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/migranet/migranet/settings"
)

// ExcludedAtInboundLimit is the reason of a node the steering prefers against because as many
// migrations stream into it as its budget's inbound limit lets (AtInboundLimit).
const ExcludedAtInboundLimit = "AtInboundLimit"

// budgetWeight is the weight of the preferred term that keeps target pods off the nodes at their
// inbound limit: the same as the verified paths' (a node at its limit is as much to avoid as one
// whose path is not verified; one both at its limit and unverified is the last choice).
const budgetWeight = 100

// AtInboundLimit lists the nodes into which as many migrations stream (traffic.In) as the inbound
// limit of their budget (the policy's budget for their labels, settings.MigrationLimits.InboundLimit
// with the KubeVirt CR's limits) lets, in name order, leaving out the source and the nodes in
// skip. Nothing without a budget or without traffic counted. Only the nodes something streams
// into are looked at: the cost is the number of migrations in flight, not of nodes. The full list
// is worked out once per count of the traffic (and policy, KubeVirt CR and node index, each
// replaced, never changed, when it changes): every target pod steered meanwhile only filters it.
func AtInboundLimit(in *CreateInput, source string, skip map[string]bool) []Exclusion {
	if in.Policy == nil || in.Policy.Budget == nil || in.Traffic == nil || len(in.Traffic.In) == 0 {
		return nil
	}
	full := in.Traffic.atInboundLimit(in)
	out := make([]Exclusion, 0, len(full))
	for _, e := range full {
		if e.Node != source && !skip[e.Node] {
			out = append(out, e)
		}
	}
	return out
}

// atLimitMemo is the nodes at their inbound limit for one policy, KubeVirt CR and node index.
type atLimitMemo struct {
	policy *settings.MigrationPolicy
	kv     *kubevirtv1.KubeVirt
	index  *nodeIndex
	full   []Exclusion
}

// atInboundLimit is every node of t.In at its inbound limit, in name order, from the memo when it
// was worked out with in's policy, KubeVirt CR and nodes.
func (t *Traffic) atInboundLimit(in *CreateInput) []Exclusion {
	if m := t.atLimit.Load(); m != nil && m.policy == in.Policy && m.kv == in.KubeVirt && m.index == in.index && in.index != nil {
		return m.full
	}
	limits := settings.MigrationLimitsOf(in.KubeVirt)
	full := make([]Exclusion, 0, len(t.In))
	// The messages are concatenated, the rate worded once per bandwidth: fmt per node was most of
	// the steering's added cost (go test -bench SteerWorstCaseBudget -cpuprofile).
	rateOf, rate := int64(-1), ""
	for name, n := range t.In {
		node := nodeNamed(in, name)
		if node == nil {
			continue // gone: the scheduler cannot pick it anyway
		}
		nb := in.Policy.Budget.For(node.Labels)
		if limit := limits.InboundLimit(nb); n >= limit {
			if nb.Bandwidth != rateOf {
				rateOf, rate = nb.Bandwidth, settings.Rate(nb.Bandwidth)
			}
			full = append(full, Exclusion{Node: name, Reason: ExcludedAtInboundLimit,
				Message: strconv.Itoa(n) + " migrations stream into it, its inbound limit is " + strconv.Itoa(limit) + " (budget " + rate + ")"})
		}
	}
	slices.SortFunc(full, func(a, b Exclusion) int { return strings.Compare(a.Node, b.Node) })
	// Without a node index (a caller that built its input by hand) nothing identifies the nodes
	// the list was worked out with: it is not kept.
	if in.index != nil {
		t.atLimit.Store(&atLimitMemo{policy: in.Policy, kv: in.KubeVirt, index: in.index, full: full})
	}
	return full
}

// nodeNamed is in's node called name, by the node index when there is one.
func nodeNamed(in *CreateInput, name string) *corev1.Node {
	if i, ok := in.index.position(name); ok {
		return in.index.nodes[i]
	}
	if in.index != nil {
		return nil
	}
	for _, n := range in.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// spreadFrom is the UIDs of the migrations whose target pods are being placed (made, not bound)
// other than in's own, with a budget and a count of the traffic; none past maxPreferred (KubeVirt
// runs 5 at once by default). Without its
// own among them it is the count's own list, shared (capacity capped: an append copies it).
func spreadFrom(in *CreateInput) []string {
	t := in.Traffic
	if in.Policy == nil || in.Policy.Budget == nil || t == nil || len(t.Placing) > maxPreferred+1 {
		return nil
	}
	all := t.placing
	if len(all) != len(t.Placing) {
		all = make([]string, len(t.Placing))
		for i, uid := range t.Placing {
			all[i] = string(uid)
		}
	}
	own, mine := slices.BinarySearch(t.Placing, in.VMIM.UID)
	switch {
	case mine && len(all) == 1:
		return nil
	case mine:
		all = slices.Concat(all[:own], all[own+1:])
	}
	if len(all) == 0 || len(all) > maxPreferred {
		return nil
	}
	return all[:len(all):len(all)]
}

// SpreadTerm is the preferred pod anti-affinity term of a target pod against the target pods of
// the migrations uids (those not bound when it was steered), in every namespace, per node (weight
// budgetWeight). The scheduler counts the pods it has placed but not yet bound (its assumed pods),
// so target pods made together, each steered before the first is bound, still land on different
// nodes: the inbound counts the steering reads lag behind exactly those; a bound one is counted
// into its node already (AtInboundLimit).
func SpreadTerm(uids []string) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: budgetWeight, PodAffinityTerm: corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: kubevirtv1.MigrationJobLabel, Operator: metav1.LabelSelectorOpIn, Values: uids}}},
		NamespaceSelector: &metav1.LabelSelector{},
		TopologyKey:       corev1.LabelHostname,
	}}
}
