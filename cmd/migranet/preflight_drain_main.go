package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/drainplan"
	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// checkDrain checks the flags of `preflight --drain NODE`; positional are the arguments left.
func (f *preflightFlags) checkDrain(positional []string) error {
	switch {
	case f.drain == "":
		return errors.New("-w follows a drain: use it with --drain NODE (migranet preflight --drain NODE -w)")
	case len(positional) > 0:
		return fmt.Errorf("unexpected argument %q: --drain %s plans every VMI on the node; drop the VMI, or drop --drain to judge one migration", positional[0], f.drain)
	case f.targetSelector != nil:
		return fmt.Errorf("--target-selector is a migration's spec.addedNodeSelector, which a drain's migrations do not carry: drop it with --drain")
	}
	if errs := validation.IsDNS1123Subdomain(f.drain); len(errs) > 0 {
		return fmt.Errorf("--drain %q is not a valid node name: %s", f.drain, strings.Join(errs, "; "))
	}
	switch m := f.metrics; {
	case m == metricsVirtHandler, m == metricsNone, strings.HasPrefix(m, "http://"), strings.HasPrefix(m, "https://"):
	default:
		return fmt.Errorf("--metrics %q: want virt-handler, none, or an http(s):// URL of metrics in Prometheus' text format", m)
	}
	if err := checkOutput(f.output); err != nil {
		return err
	}
	return f.check()
}

// drainMain is `migranet preflight --drain NODE`: the plan, then with -w the drain against it.
func drainMain(ctx context.Context, name string, cfg *rest.Config, f *preflightFlags, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		_, _ = fmt.Fprint(stderr, asTyped(name, fmt.Sprintf("migranet preflight: "+format+"\n", a...)))
		return drainplan.ExitError
	}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return fail("%v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail("%s", explain(err, cfg, &f.clusterFlags))
	}
	p, err := makePlan(ctx, c, cfg, f.kubevirtNamespace, f.drain, f.metrics)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return fail("%s", usage.msg)
	case err != nil:
		return fail("%s", explain(err, cfg, &f.clusterFlags))
	}
	code, err := printPlan(stdout, p, f.output)
	if err != nil {
		return fail("writing output: %v", err)
	}
	if !f.watch {
		return code
	}
	if err := followDrain(ctx, c, cfg, f, p, stdout); err != nil {
		return fail("%s", explain(err, cfg, &f.clusterFlags))
	}
	return code
}

// makePlan reads the cluster and plans the drain of node.
func makePlan(ctx context.Context, c client.Client, cfg *rest.Config, kubevirtNamespace, node, metrics string) (*drainplan.Plan, error) {
	d, err := readDrainCluster(ctx, c, cfg, kubevirtNamespace, node, metrics)
	if err != nil {
		return nil, err
	}
	snap, err := netcontroller.ObserveOnce(ctx, c, kubevirtNamespace)
	if err != nil {
		return nil, err
	}
	api := &migrationcheck.APIState{Reader: c, KubeVirtNamespace: kubevirtNamespace, Snapshot: snap}
	return planDrain(ctx, api, d)
}
