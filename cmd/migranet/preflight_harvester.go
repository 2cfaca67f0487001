package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/harvestermode"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// harvesterCluster reports whether Harvester's migrate action is there to create migrations, and
// so whether preflight shows what it offers: migranet runs in Harvester mode (its
// vm-migration-network setting's status.source.kind is Harvester), or the API server serves
// Harvester's Setting resource (settings.harvesterhci.io, found through discovery, which needs no
// permission on Harvester's objects): Harvester's API then runs, whatever migranet's
// --harvester flag. why is "" unless that could not be told.
func harvesterCluster(ctx context.Context, c client.Client) (on bool, why string) {
	s := &v1beta1.Setting{}
	if err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err == nil &&
		s.Status.Source != nil && s.Status.Source.Kind == v1beta1.SourceHarvester {
		return true, ""
	}
	gvk := harvestermode.SettingGVK
	_, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, ""
	case meta.IsNoMatchError(err):
		return false, ""
	}
	return false, fmt.Sprintf("whether Harvester is installed could not be told (discovery of %s: %v): Harvester's offers are not shown", gvk.Group, err)
}

// markHarvesterOffers sets, on every node of res, whether Harvester's migrate action offers it
// as a target of VMI namespace/name, read as Harvester v1.8.2 reads it: the VMI
// (harvestermode.NotMigratable), its one active pod (harvestermode.ActivePod) and the nodes
// (harvestermode.OfferedTargets). It returns a note when Harvester offers no node for a reason of
// its own, or when what it reads could not be read (no node is marked then).
func markHarvesterOffers(ctx context.Context, r client.Reader, namespace, name string, res *migrationcheck.PreflightResult) string {
	if res == nil || res.Nodes == nil {
		return "" // no VMI: nothing to offer, and vmiState says so
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vmi); err != nil {
		return fmt.Sprintf("Harvester's offers are not shown: reading the VMI: %v", err)
	}
	var offered []string
	why := harvestermode.NotMigratable(vmi)
	if why == "" {
		pods := &corev1.PodList{}
		if err := r.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
			return fmt.Sprintf("Harvester's offers are not shown: listing the VMI's pods: %v", err)
		}
		ptrs := make([]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			ptrs[i] = &pods.Items[i]
		}
		var pod *corev1.Pod
		pod, why = harvestermode.ActivePod(vmi, ptrs)
		if pod != nil {
			nodes := &corev1.NodeList{}
			if err := r.List(ctx, nodes); err != nil {
				return fmt.Sprintf("Harvester's offers are not shown: listing the nodes: %v", err)
			}
			nptrs := make([]*corev1.Node, len(nodes.Items))
			for i := range nodes.Items {
				nptrs[i] = &nodes.Items[i]
			}
			offered = harvestermode.OfferedTargets(pod, vmi.Status.NodeName, nptrs)
			if len(offered) == 0 {
				why = "no node passes its filters (the VMI's pod's node selector and required node affinity, all terms ANDed; not the VMI's node; not cordoned, in maintenance or draining)"
			}
		}
	}
	for i := range res.Nodes {
		offers := slices.Contains(offered, res.Nodes[i].Node)
		res.Nodes[i].HarvesterOffers = &offers
	}
	if why != "" {
		return "Harvester's migrate action offers no node: " + why
	}
	return ""
}

// harvesterConflicts are the lines under the node table: every node Harvester's migrate action
// offers that migranet refuses, with migranet's reason. A migration Harvester creates to one of
// them is refused with that reason.
func harvesterConflicts(nodes []migrationcheck.NodeVerdict) []string {
	var out []string
	for _, n := range nodes {
		if n.HarvesterOffers != nil && *n.HarvesterOffers && !n.Fits {
			out = append(out, fmt.Sprintf("Harvester's migrate action offers %s, which migranet refuses: %s", n.Node, strings.TrimSpace(n.Reason)))
		}
	}
	return out
}
