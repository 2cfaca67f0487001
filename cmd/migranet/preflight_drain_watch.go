package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
)

// followPoll is how often -w reads the VMIs and migrations (and the metrics).
const followPoll = time.Second

// followDrain follows the drain against p: it reads the VMIs and migrations every followPoll and
// prints a report each time a VMI's state changes, until every VMI that was to move or stop did
// (the drain is done), or ctx ends (Ctrl-C).
func followDrain(ctx context.Context, c client.Client, cfg *rest.Config, f *preflightFlags, p *drainplan.Plan, stdout interface{ Write([]byte) (int, error) }) error {
	since := time.Now()
	last := ""
	// A source that answered nothing is not asked again each second (a virt-handler that does not
	// answer costs metricsTimeout a read).
	metrics := f.metrics
	if metrics != metricsNone && readMetrics(ctx, cfg, c, f.kubevirtNamespace, metrics).Sources == 0 {
		metrics = metricsNone
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		vmis := &kubevirtv1.VirtualMachineInstanceList{}
		if err := c.List(ctx, vmis); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listing VirtualMachineInstances: %w", err)
		}
		vmims := &kubevirtv1.VirtualMachineInstanceMigrationList{}
		if err := c.List(ctx, vmims); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listing VirtualMachineInstanceMigrations: %w", err)
		}
		byKey := map[string]*kubevirtv1.VirtualMachineInstance{}
		for i := range vmis.Items {
			byKey[vmis.Items[i].Namespace+"/"+vmis.Items[i].Name] = &vmis.Items[i]
		}
		var m *drainplan.Metrics
		if metrics != metricsNone {
			m = readMetrics(ctx, cfg, c, f.kubevirtNamespace, metrics)
		}
		pr := drainplan.Track(p, func(ns, name string) *kubevirtv1.VirtualMachineInstance { return byKey[ns+"/"+name] },
			vmims.Items, m, since, time.Now())
		if k := pr.Key(); k != last || pr.Finished {
			last = k
			if err := pr.Print(stdout, f.output); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
		if pr.Finished {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
