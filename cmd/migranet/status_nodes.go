package main

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/status"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/v1beta1"
)

// showNodes prints the node view (migranet status --nodes).
func showNodes(ctx context.Context, c client.Client, f *statusFlags, stdout io.Writer) error {
	in, err := readNodeInput(ctx, c, f.kubevirtNamespace, nil)
	if err != nil {
		return err
	}
	net, _ := readNetwork(ctx, c)
	nodes := status.Nodes(in)
	net.Budget = status.Summarize(nodes)
	if err := status.PrintNodes(stdout, f.output, net, nodes); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// readBudgetSummary is the header's budget line for the migration listing; nil when no node has
// a budget or what it needs cannot be read (the listing goes on without it). every, when not nil,
// is every migration of the cluster, already read (a listing of all namespaces).
func readBudgetSummary(ctx context.Context, c client.Client, kubevirtNamespace string, every []status.Row) *status.BudgetSummary {
	in, err := readNodeInput(ctx, c, kubevirtNamespace, every)
	if err != nil {
		return nil
	}
	return status.Summarize(status.Nodes(in))
}

// readNodeInput reads what the node view needs: the nodes, the probe agents' reports, every
// migration with its VMI (the nodes they stream between), and each node's inbound limit from the
// migration policy's budget and the KubeVirt CR's limits.
func readNodeInput(ctx context.Context, c client.Client, kubevirtNamespace string, every []status.Row) (status.NodeInput, error) {
	in := status.NodeInput{Now: time.Now()}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return in, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		in.Nodes = append(in.Nodes, n.Name)
	}
	reports := &v1beta1.PathReportList{}
	if err := c.List(ctx, reports); err != nil {
		return in, fmt.Errorf("listing the probe agents' PathReports: %w", err)
	}
	in.Reports = reports.Items
	in.Rows = every
	if every == nil {
		vmims, vmis, err := readMigrations(ctx, c, "")
		if err != nil {
			return in, err
		}
		in.Rows = combineAll(vmims, func(ns, name string) *kubevirtv1.VirtualMachineInstance { return vmis[ns+"/"+name] }, in.Now)
	}
	limit, err := readInboundLimits(ctx, c, kubevirtNamespace, nodes.Items)
	if err != nil {
		return in, err
	}
	in.InboundLimit = limit
	return in, nil
}

// readInboundLimits is each node's inbound limit under the migration policy's budget (nil: no
// budget); a missing policy or KubeVirt CR means none (KubeVirt's defaults for the limits).
func readInboundLimits(ctx context.Context, c client.Client, kubevirtNamespace string, nodes []corev1.Node) (func(string) int, error) {
	s := &v1beta1.Setting{}
	err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationPolicy}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s Setting: %w", v1beta1.MigrationPolicy, err)
	}
	p, _ := settings.ParseMigrationPolicy(settings.EffectiveValue(s), field.NewPath("value"))
	if p == nil || p.Budget == nil {
		return nil, nil
	}
	kv, err := clusterread.KubeVirtCR(ctx, c, kubevirtNamespace)
	if err != nil {
		return nil, fmt.Errorf("reading the KubeVirt CR: %w", err)
	}
	limits := settings.MigrationLimitsOf(kv)
	byNode := make(map[string]int, len(nodes))
	for _, n := range nodes {
		if nb := p.Budget.For(n.Labels); nb.Bandwidth > 0 {
			byNode[n.Name] = limits.InboundLimit(nb)
		}
	}
	return func(node string) int { return byNode[node] }, nil
}
