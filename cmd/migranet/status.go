package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/migranet/migranet/cmd/migranet/status"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// statusUsage is the help of migranet status.
var statusUsage = `Usage: migranet status [--kubeconfig FILE] [--context NAME] [-n NAMESPACE | -A] [-w] [-o table|json] [--request-timeout 30s]
       migranet status [--kubeconfig FILE] [--context NAME] [--kubevirt-namespace ` + settings.DefaultKubeVirtNamespace + `] [-o table|json] --nodes
       migranet status [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [--kubevirt-namespace ` + settings.DefaultKubeVirtNamespace + `] NAME

Shows the live migrations (VirtualMachineInstanceMigrations) of a namespace, one row each: VMI,
source → target node, phase, mode (pre-copy, post-copy, paused), network (pod or migration),
elapsed time and the state combined from the migration and its VMI, under a header line with the
state of the migration network (the vm-migration-network Setting). Migrations in flight come
first; finished ones stay listed after them. With -w it keeps watching and prints a line each time
a migration's state or the network changes, until Ctrl-C; --request-timeout then limits the
start of the watch (1m when 0), not its stream.

With --nodes it shows each node's migration traffic instead, one row each: its migration budget
(the migration-policy Setting's budget) and whether its probe agent shapes migration0 to it, what
crossed migration0 each way over the agent's last round (average and peak second), how often the
budget held packets back, the migrations streaming into it (of its inbound limit) and out of it,
and whether the agent's report is of its last round or the agent is silent. When a budget applies,
the header of every listing sums it up in a second line.

With a migration NAME it tells that migration's story, for one that failed, is stuck or is slow:
its cause in one line, then in order whether it was admitted (and with which warnings), how its
target pod was steered, scheduled or why it is Pending, when and where its stream started, its
progress, the path verdict between its two nodes, how it ended, and what to do. It also works
once the migration is gone (cancelled, or aborted by migranet) or was refused, from the events
the cluster keeps (an hour, by default).

Exit status: 0 listed (or watch ended by Ctrl-C), 1 the cluster could not be read, 2 bad usage or
no usable kubeconfig.

Flags:
` + formatFlags(docKubeconfig, docContext, docNamespace("namespace to list"), docAllNamespaces,
	flagDoc{"-w, --watch", "after listing, print a line for every change"},
	flagDoc{"--nodes", "show each node's migration budget, shaping and traffic instead of the migrations"},
	flagDoc{docOutput.flag, docOutput.text + " (with -w: one JSON object per line)"},
	docKubeVirtNS, docRequestTimeout)

// Exit codes of runStatus.
const (
	statusOK         = 0
	statusClusterErr = 1
	statusUsageErr   = 2
)

// vmiGetLimit is how many VMIs are fetched one by one; above it they are listed.
const vmiGetLimit = 32

// watchSyncTimeout bounds the start of a watch when --request-timeout is 0.
const watchSyncTimeout = time.Minute

// statusFlags are the options of migranet status.
type statusFlags struct {
	clusterFlags
	output string
	watch  bool
	// migration, when set, asks for that one migration's story instead of the list.
	migration string
	// nodes asks for the node view instead of the list.
	nodes bool
}

// runStatus runs migranet status until it is done or interrupted.
func runStatus(name string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return statusMain(ctx, name, args, stdout, stderr)
}

// statusMain is migranet status with its context given; it returns the exit code.
func statusMain(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		_, _ = fmt.Fprint(stderr, asTyped(name, fmt.Sprintf("migranet status: "+format+"\n", a...)))
		return code
	}
	f, err := parseStatusFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = fmt.Fprint(stdout, asTyped(name, statusUsage))
		return statusOK
	}
	if err != nil {
		return fail(statusUsageErr, "%v\nRun 'migranet status -h' for its flags.", err)
	}
	cfg, namespace, err := f.load("migranet-status")
	if err != nil {
		return fail(statusUsageErr, "%v", err)
	}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return fail(statusClusterErr, "%v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail(statusClusterErr, "%s", explain(err, cfg, &f.clusterFlags))
	}
	if f.migration != "" {
		if err := explainMigration(ctx, c, f, namespace, f.migration, stdout); err != nil {
			return fail(statusClusterErr, "%s", explain(err, cfg, &f.clusterFlags))
		}
		return statusOK
	}
	if f.nodes {
		if err := showNodes(ctx, c, f, stdout); err != nil {
			return fail(statusClusterErr, "%s", explain(err, cfg, &f.clusterFlags))
		}
		return statusOK
	}
	vmims, vmis, err := readMigrations(ctx, c, namespace)
	if err != nil {
		return fail(statusClusterErr, "%s", explain(err, cfg, &f.clusterFlags))
	}
	net, settingWatchable := readNetwork(ctx, c)
	if !f.watch {
		rows := combineAll(vmims, func(ns, name string) *kubevirtv1.VirtualMachineInstance { return vmis[ns+"/"+name] }, time.Now())
		every := rows // -A: the migrations the listing read are every migration the node counts need
		if !f.allNamespaces {
			every = nil
		}
		net.Budget = readBudgetSummary(ctx, c, f.kubevirtNamespace, every)
		status.AttachWarnings(rows, readWarnedEvents(ctx, c, namespace, len(rows)))
		status.AttachSteering(rows, readSteeringEvents(ctx, c, namespace, len(rows)))
		status.InferNetwork(rows, net)
		if err := status.Print(stdout, f.output, f.allNamespaces, net, rows); err != nil {
			return fail(statusClusterErr, "writing output: %v", err)
		}
		if len(rows) == 0 && f.output == status.FormatTable {
			_, _ = fmt.Fprintln(stderr, noMigrations(namespace))
		}
		return statusOK
	}
	net.Budget = readBudgetSummary(ctx, c, f.kubevirtNamespace, nil)
	if err := watchMigrations(ctx, cfg, scheme, namespace, net, settingWatchable, f, stdout, stderr); err != nil {
		return fail(statusClusterErr, "%s", explain(err, cfg, &f.clusterFlags))
	}
	return statusOK
}

// newStatusFlags returns the options of migranet status and the FlagSet that fills them.
func newStatusFlags() (*statusFlags, *flag.FlagSet) {
	f := &statusFlags{}
	fs := newFlagSet("migranet status")
	f.register(fs)
	f.registerAllNamespaces(fs)
	registerOutput(fs, &f.output)
	for _, n := range []string{"w", "watch"} {
		fs.BoolVar(&f.watch, n, false, "")
	}
	fs.BoolVar(&f.nodes, "nodes", false, "")
	return f, fs
}

// parseStatusFlags parses the arguments of migranet status.
func parseStatusFlags(args []string) (*statusFlags, error) {
	f, fs := newStatusFlags()
	if err := fs.Parse(kubectlShortFlags(args)); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 1:
		return nil, fmt.Errorf("unexpected argument %q: status takes at most one migration name (migranet status -n NAMESPACE NAME)", fs.Arg(1))
	case fs.NArg() == 1 && (f.allNamespaces || f.watch):
		return nil, fmt.Errorf("a migration name (%q) tells one migration's story: it takes -n NAMESPACE, not -A or -w", fs.Arg(0))
	case fs.NArg() == 1 && f.nodes:
		return nil, fmt.Errorf("--nodes shows every node; a migration name (%q) tells one migration's story: give one or the other", fs.Arg(0))
	case fs.NArg() == 1:
		f.migration = fs.Arg(0)
	case f.nodes && f.watch:
		return nil, fmt.Errorf("--nodes does not watch (-w): run it again, or watch the agents' metrics (docs/observability.md)")
	}
	if err := checkOutput(f.output); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// readMigrations lists the migrations of namespace ("" for all) and the VMIs they name, by key
// "namespace/name" (absent: not found).
func readMigrations(ctx context.Context, c client.Client, namespace string) ([]kubevirtv1.VirtualMachineInstanceMigration, map[string]*kubevirtv1.VirtualMachineInstance, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing VirtualMachineInstanceMigrations: %w", err)
	}
	wanted := map[string]client.ObjectKey{}
	for _, m := range list.Items {
		wanted[m.Namespace+"/"+m.Spec.VMIName] = client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.VMIName}
	}
	vmis := map[string]*kubevirtv1.VirtualMachineInstance{}
	if len(wanted) > vmiGetLimit {
		all := &kubevirtv1.VirtualMachineInstanceList{}
		if err := c.List(ctx, all, client.InNamespace(namespace)); err != nil {
			return nil, nil, fmt.Errorf("listing VirtualMachineInstances: %w", err)
		}
		for i := range all.Items {
			vmis[all.Items[i].Namespace+"/"+all.Items[i].Name] = &all.Items[i]
		}
		return list.Items, vmis, nil
	}
	for k, key := range wanted {
		if key.Name == "" {
			continue
		}
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := c.Get(ctx, key, vmi)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading VirtualMachineInstance %s: %w", k, err)
		}
		vmis[k] = vmi
	}
	return list.Items, vmis, nil
}

// readNetwork reads the vm-migration-network Setting into the header, and says whether it can be
// watched (its API exists and may be read).
func readNetwork(ctx context.Context, c client.Reader) (status.Network, bool) {
	s := &v1beta1.Setting{}
	err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s)
	switch {
	case err == nil:
		return status.Header(s), true
	case apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return status.Header(nil), true
	case meta.IsNoMatchError(err) || discoveryMissing(err):
		return status.Unavailable(status.ReasonNoAPI, "the cluster has no settings.migranet.io API: is migranet installed?"), false
	case apierrors.IsForbidden(err):
		return status.Unavailable(status.ReasonForbidden, err.Error()), false
	default:
		return status.Unavailable(status.ReasonError, err.Error()), false
	}
}

// discoveryMissing reports a resource type the API server does not serve.
func discoveryMissing(err error) bool {
	var noKind *meta.NoKindMatchError
	return errors.As(err, &noKind) || strings.Contains(err.Error(), "the server could not find the requested resource")
}

// combineAll combines every migration with its VMI (vmi returns nil when it is missing) and sorts.
func combineAll(vmims []kubevirtv1.VirtualMachineInstanceMigration, vmi func(ns, name string) *kubevirtv1.VirtualMachineInstance, now time.Time) []status.Row {
	rows := make([]status.Row, 0, len(vmims))
	for i := range vmims {
		m := &vmims[i]
		rows = append(rows, status.Combine(m, vmi(m.Namespace, m.Spec.VMIName), now))
	}
	status.Sort(rows)
	return rows
}

// noMigrations is kubectl's note for an empty listing of namespace ("" for all).
func noMigrations(namespace string) string {
	if namespace == "" {
		return "No migrations found."
	}
	return fmt.Sprintf("No migrations found in namespace %s.", namespace)
}

// watchMigrations follows migrations, their VMIs and (when watchSetting) the Setting through an
// informer cache and prints every change until ctx ends; fixedNet is the header when the Setting
// cannot be watched.
func watchMigrations(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string, fixedNet status.Network, watchSetting bool, f *statusFlags, stdout, stderr io.Writer) error {
	ctrllog.SetLogger(logr.Discard())
	streamCfg := rest.CopyConfig(cfg)
	streamCfg.Timeout = 0 // a watch is a long request; --request-timeout bounds the first sync instead
	opts := cache.Options{
		Scheme:           scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&kubevirtv1.VirtualMachineInstance{}: {Transform: migrationcheck.TrimVMI}},
	}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	if watchSetting {
		opts.ByObject[&v1beta1.Setting{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", v1beta1.MigrationNetwork)}
	}
	ca, err := cache.New(streamCfg, opts)
	if err != nil {
		return err
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}
	objs := []client.Object{&kubevirtv1.VirtualMachineInstanceMigration{}, &kubevirtv1.VirtualMachineInstance{}}
	if watchSetting {
		objs = append(objs, &v1beta1.Setting{})
	}
	for _, o := range objs {
		inf, err := ca.GetInformer(ctx, o)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ca.Start(ctx) }()
	syncTimeout := f.requestTimeout
	if syncTimeout == 0 {
		syncTimeout = watchSyncTimeout
	}
	syncCtx, stopSync := context.WithTimeout(ctx, syncTimeout)
	defer stopSync()
	if !ca.WaitForCacheSync(syncCtx) {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return fmt.Errorf("the watch did not start within %s: does your user have watch (besides list) on "+
			"virtualmachineinstancemigrations and virtualmachineinstances?", syncTimeout)
	}
	follower := status.NewFollower(stdout, f.output, f.allNamespaces)
	first := true
	for {
		net := fixedNet
		if watchSetting {
			s := &v1beta1.Setting{}
			net = status.Header(nil)
			if err := ca.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err == nil {
				net = status.Header(s)
			}
		}
		rows, err := cachedRows(ctx, ca, namespace)
		if err != nil {
			return err
		}
		status.InferNetwork(rows, net)
		if err := follower.Update(net, rows); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		if first && len(rows) == 0 && f.output == status.FormatTable {
			_, _ = fmt.Fprintln(stderr, noMigrations(namespace)+" Watching for new ones; Ctrl-C stops.")
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		case <-changed:
		}
	}
}

// cachedRows combines the cached migrations with the cached VMIs.
func cachedRows(ctx context.Context, ca cache.Cache, namespace string) ([]status.Row, error) {
	list := &kubevirtv1.VirtualMachineInstanceMigrationList{}
	if err := ca.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return combineAll(list.Items, func(ns, name string) *kubevirtv1.VirtualMachineInstance {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		if name == "" || ca.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vmi) != nil {
			return nil
		}
		return vmi
	}, time.Now()), nil
}

// explain turns an error reading the cluster into a message that says what to do.
func explain(err error, cfg *rest.Config, f *clusterFlags) string {
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err) || discoveryMissing(err):
		return fmt.Sprintf("%v\nthe cluster at %s does not serve kubevirt.io/v1 migrations: is KubeVirt installed?", err, cfg.Host)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("%v\nyour user needs get, list and watch on virtualmachineinstancemigrations and virtualmachineinstances (kubevirt.io) in the namespace (-n), or in all namespaces for -A", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("%v\nthe API server at %s did not accept the credentials of your kubeconfig context: log in again or pick another --context", err, cfg.Host)
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fmt.Sprintf("%v\nno answer from the API server at %s within --request-timeout %s", err, cfg.Host, f.requestTimeout)
	case errors.As(err, &netErr) || strings.Contains(err.Error(), "connection refused"):
		return fmt.Sprintf("%v\ncannot reach the API server at %s: is the cluster up, and is --kubeconfig (or --context) the right one?", err, cfg.Host)
	}
	return err.Error()
}

// readSteeringEvents lists the events the target pod steering left on migrations (none when there
// are no migrations; an addition, like readWarnedEvents).
func readSteeringEvents(ctx context.Context, c client.Reader, namespace string, migrations int) []corev1.Event {
	if migrations == 0 {
		return nil
	}
	var out []corev1.Event
	for _, reason := range []string{settings.ReasonTargetSteered, settings.ReasonNoTargetLeft} {
		list := &corev1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{"reason": reason}); err != nil {
			return nil
		}
		out = append(out, list.Items...)
	}
	return out
}

// readWarnedEvents lists the events of migrations admitted with warnings (none when there are no
// migrations). They are an addition: a user who may not list events gets the listing without them.
func readWarnedEvents(ctx context.Context, c client.Reader, namespace string, migrations int) []corev1.Event {
	if migrations == 0 {
		return nil
	}
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{"reason": settings.ReasonMigrationWarned}); err != nil {
		return nil
	}
	return list.Items
}
