package drainplan

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The score plugins of kube-scheduler's default profile (v1.34) that tell nodes apart for a
// migration target pod, with their weights. ImageLocality (the launcher image is on every node
// that ran one), InterPodAffinity and PodTopologySpread (a virt-launcher pod carries neither, and
// no ReplicaSet owns it for the default spread) are not scored.
const (
	weightNodeAffinity      = 2
	weightTaintToleration   = 3
	weightLeastAllocated    = 1
	weightBalancedAllocated = 1
)

// The requests the scheduler scores a pod with when it requests none (its non-zero defaults).
var (
	nonZeroCPU    = resource.MustParse("100m")
	nonZeroMemory = resource.MustParse("200Mi")
)

// Usage is what a node's pods request, for the scores.
type Usage struct {
	CPU, Memory int64 // millicores, bytes
}

// Candidate is a node admission says can take the target pod.
type Candidate struct {
	Node  *corev1.Node
	Usage Usage
}

// Choice is the node the scheduler would pick and the others that tie with it.
type Choice struct {
	Node  string
	Ties  []string
	Score int64
}

// Choose scores the candidates as kube-scheduler's default profile would score pod (its
// preferred node affinity — the VMI's and the steering's — tolerations and requests): node
// affinity, untolerated PreferNoSchedule taints, least allocated and balanced cpu and memory,
// each normalised to 0–100 and weighted. The highest wins; the scheduler breaks a tie at random,
// so the ties are named.
func Choose(pod *corev1.Pod, cands []Candidate) Choice {
	if len(cands) == 0 {
		return Choice{}
	}
	var prefs *nodeaffinity.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		prefs, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	cpu, mem := podRequests(pod)
	affinity, taints := make([]int64, len(cands)), make([]int64, len(cands))
	var maxAff, maxTaint int64
	for i, c := range cands {
		if prefs != nil {
			affinity[i] = prefs.Score(c.Node)
		}
		for _, t := range c.Node.Spec.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(pod.Spec.Tolerations, &t) {
				taints[i]++
			}
		}
		maxAff, maxTaint = max(maxAff, affinity[i]), max(maxTaint, taints[i])
	}
	best := Choice{Score: -1}
	for i, c := range cands {
		var s int64
		if maxAff > 0 {
			s += weightNodeAffinity * affinity[i] * 100 / maxAff
		}
		if maxTaint > 0 {
			s += weightTaintToleration * (100 - taints[i]*100/maxTaint)
		} else {
			s += weightTaintToleration * 100
		}
		fc, fm := fraction(c.Usage.CPU+cpu, c.Node.Status.Allocatable.Cpu().MilliValue()), fraction(c.Usage.Memory+mem, c.Node.Status.Allocatable.Memory().Value())
		s += weightLeastAllocated * int64(((1-fc)*100+(1-fm)*100)/2)
		d := fc - fm
		if d < 0 {
			d = -d
		}
		s += weightBalancedAllocated * int64((1-d/2)*100)
		switch {
		case s > best.Score:
			best = Choice{Node: c.Node.Name, Score: s}
		case s == best.Score:
			best.Ties = append(best.Ties, c.Node.Name)
		}
	}
	slices.Sort(best.Ties)
	return best
}

// fraction is used/alloc, at most 1 (0 for a node that reports no allocatable).
func fraction(used, alloc int64) float64 {
	if alloc <= 0 {
		return 1
	}
	return min(1, float64(used)/float64(alloc))
}

// podRequests is what the scheduler's scores count of pod: the sum of its containers' cpu and
// memory requests, a container that requests none of one counted with the scheduler's non-zero
// default for it (per container, as NodeResourcesFit's scorer passes NonMissingContainerRequests).
func podRequests(pod *corev1.Pod) (cpu, mem int64) {
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			cpu += q.MilliValue()
		} else {
			cpu += nonZeroCPU.MilliValue()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			mem += q.Value()
		} else {
			mem += nonZeroMemory.Value()
		}
	}
	return cpu, mem
}

// UsageOf sums what the active pods bound to each node request (cpu and memory, the scheduler's
// non-zero defaults for a pod requesting none).
func UsageOf(pods []*corev1.Pod) map[string]Usage {
	out := map[string]Usage{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := podRequests(p)
		u := out[p.Spec.NodeName]
		u.CPU, u.Memory = u.CPU+cpu, u.Memory+mem
		out[p.Spec.NodeName] = u
	}
	return out
}
