package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// preflightUsage is the help of migranet preflight.
var preflightUsage = `Usage: migranet preflight [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] VMI
           [--target-selector KEY=VALUE,...] [-o table|json] [--kubevirt-namespace ` + settings.DefaultKubeVirtNamespace + `]
           [--request-timeout 30s]
       migranet preflight --drain NODE [-w] [--metrics virt-handler|none|URL] [-o table|json] [...]

Asks, before the migration exists, what migranet's admission webhook would answer to a
VirtualMachineInstanceMigration of VMI: each rule's verdict (pass, warn, fail, or off, exempt,
skipped) with the webhook's own message, and every node with whether it can receive the VMI and,
if not, why. It runs the webhook's code on the state it reads from the API server, as your user
(exemptUsers of the migration-policy setting apply to you as they would to your create).
On Harvester (migranet in Harvester mode, or Harvester's Setting resource served) a column says
which nodes Harvester's migrate action offers, and a line names each one migranet refuses.
--target-selector is the migration's spec.addedNodeSelector.
As a kubectl plugin (the binary on PATH as kubectl-migranet): kubectl migranet preflight VMI.

With --drain NODE it plans the drain of NODE instead (docs/drain.md): for every VMI on it, whether
it moves and where (the target kube-scheduler would pick among those admission allows, the path
verdict to it), or why not; the expected time of each migration and of the whole drain under
KubeVirt's limits; what the drain leaves behind. With -w it then follows the drain against the
plan until every VMI has moved or stopped. --metrics says where KubeVirt's dirty rates and
transfer rates are read: virt-handler (default; its /metrics through the API server, needs get on
pods/proxy), none, or a URL in Prometheus' text format (a Prometheus server's /federate).

Exit status: 0 a migration would be admitted (possibly with warnings), 1 it would be refused,
2 bad usage or the cluster could not be read. With --drain: 0 the drain would complete with every
VMI live-migrated, 1 it would not complete, 2 as above, 3 it would complete but shut VMs down.

Flags:
` + formatFlags(docKubeconfig, docContext, docNamespace("the VMI's namespace"),
	flagDoc{"--target-selector K=V,...", "labels the target node must carry (spec.addedNodeSelector)"},
	flagDoc{"--drain NODE", "plan the drain of NODE instead of one migration"},
	flagDoc{"-w, --watch", "with --drain: then follow the drain against the plan, until it is done or Ctrl-C"},
	flagDoc{"--metrics SOURCE", "with --drain: virt-handler (default), none, or an http(s) URL of metrics\nin Prometheus' text format"},
	docOutput, docKubeVirtNS, docRequestTimeout)

// Exit codes of runPreflight.
const (
	preflightAdmitted = 0
	preflightRefused  = 1
	preflightError    = 2
)

// preflightFlags are the options of migranet preflight.
type preflightFlags struct {
	clusterFlags
	output         string
	vmi            string
	targetSelector map[string]string
	// drain, when set, asks for the drain plan of that node; watch then follows the drain;
	// metrics is where KubeVirt's metrics are read.
	drain   string
	watch   bool
	metrics string
}

// runPreflight runs migranet preflight until it is done or interrupted.
func runPreflight(name string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return preflightMain(ctx, name, args, stdout, stderr)
}

// preflightMain is migranet preflight with its context given; it returns the exit code.
func preflightMain(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		_, _ = fmt.Fprint(stderr, asTyped(name, fmt.Sprintf("migranet preflight: "+format+"\n", a...)))
		return preflightError
	}
	f, err := parsePreflightFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = fmt.Fprint(stdout, asTyped(name, preflightUsage))
		return preflightAdmitted
	}
	if err != nil {
		return fail("%v\nRun 'migranet preflight -h' for its flags.", err)
	}
	cfg, namespace, err := f.load("migranet-preflight")
	if err != nil {
		return fail("%v", err)
	}
	if f.drain != "" {
		return drainMain(ctx, name, cfg, f, stdout, stderr)
	}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return fail("%v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail("%s", explain(err, cfg, &f.clusterFlags))
	}
	user, userErr := whoAmI(ctx, c)
	if userErr != nil {
		_, _ = fmt.Fprintf(stderr, name+" preflight: could not learn your username (%v): judged as an anonymous user, exemptUsers not applied\n", userErr)
	}
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: f.vmi, AddedNodeSelector: f.targetSelector},
	}
	res, err := preflight(ctx, c, f.kubevirtNamespace, vmim, user)
	if err != nil {
		return fail("%s", explain(err, cfg, &f.clusterFlags))
	}
	report := preflightReport{Namespace: namespace, VMI: f.vmi, User: user.Username, PreflightResult: res}
	if on, why := harvesterCluster(ctx, c); on {
		report.HarvesterNote = markHarvesterOffers(ctx, c, namespace, f.vmi, res)
	} else {
		report.HarvesterNote = why
	}
	if err := report.print(stdout, f.output); err != nil {
		return fail("writing output: %v", err)
	}
	if !res.Admitted {
		return preflightRefused
	}
	return preflightAdmitted
}

// preflight asks the webhook's rules, over state read from the API server, what they would
// answer to vmim created by user.
func preflight(ctx context.Context, c client.Client, kubevirtNamespace string, vmim *kubevirtv1.VirtualMachineInstanceMigration, user authenticationv1.UserInfo) (*migrationcheck.PreflightResult, error) {
	snap, err := netcontroller.ObserveOnce(ctx, c, kubevirtNamespace)
	if err != nil {
		return nil, err
	}
	st := &migrationcheck.APIState{Reader: c, KubeVirtNamespace: kubevirtNamespace, Snapshot: snap}
	return migrationcheck.Preflight(ctx, st, vmim, user.Username)
}

// whoAmI asks the API server who the kubeconfig's credentials are (a SelfSubjectReview).
func whoAmI(ctx context.Context, c client.Client) (authenticationv1.UserInfo, error) {
	r := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, r); err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// newPreflightFlags returns the options of migranet preflight and the FlagSet that fills them.
func newPreflightFlags() (*preflightFlags, *flag.FlagSet) {
	f := &preflightFlags{}
	fs := newFlagSet("migranet preflight")
	f.register(fs)
	registerOutput(fs, &f.output)
	fs.StringVar(&f.drain, "drain", "", "")
	fs.StringVar(&f.metrics, "metrics", metricsVirtHandler, "")
	for _, n := range []string{"w", "watch"} {
		fs.BoolVar(&f.watch, n, false, "")
	}
	fs.Func("target-selector", "", func(v string) error {
		sel, err := parseTargetSelector(v)
		f.targetSelector = sel
		return err
	})
	return f, fs
}

// parsePreflightFlags parses the arguments of migranet preflight; flags may follow the VMI.
func parsePreflightFlags(args []string) (*preflightFlags, error) {
	f, fs := newPreflightFlags()
	// Flags may follow the VMI's name, as with kubectl: parse, take one argument, parse the rest.
	var positional []string
	rest := kubectlShortFlags(args)
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if f.drain != "" || f.watch {
		if err := f.checkDrain(positional); err != nil {
			return nil, err
		}
		return f, nil
	}
	switch {
	case len(positional) == 0:
		return nil, errors.New("missing the VMI: name the VirtualMachineInstance to migrate, e.g. migranet preflight -n NAMESPACE VMI")
	case len(positional) > 1:
		return nil, fmt.Errorf("unexpected argument %q: preflight judges one VMI at a time", positional[1])
	}
	f.vmi = positional[0]
	if errs := validation.IsDNS1123Subdomain(f.vmi); len(errs) > 0 {
		return nil, fmt.Errorf("VMI %q is not a valid VirtualMachineInstance name: %s", f.vmi, strings.Join(errs, "; "))
	}
	if err := checkOutput(f.output); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// parseTargetSelector reads "k=v,k2=v2" into a node selector.
func parseTargetSelector(v string) (map[string]string, error) {
	sel := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE pairs separated by commas, e.g. --target-selector topology.kubernetes.io/zone=a,rack=r3", v)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%q: label key %q is invalid: %s", v, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			return nil, fmt.Errorf("%q: label value %q of key %s is invalid: %s", v, val, k, strings.Join(errs, "; "))
		}
		if prev, dup := sel[k]; dup && prev != val {
			return nil, fmt.Errorf("%q: key %s is given twice with different values; a node carries one value per key", v, k)
		}
		sel[k] = val
	}
	return sel, nil
}
