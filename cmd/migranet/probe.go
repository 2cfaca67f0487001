//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/migranet/migranet/netcontroller/nodeagent"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/v1beta1"
)

// probeUsage is the help of migranet probe, followed by its flags.
const probeUsage = `Usage: migranet probe [flags]

Runs the probe agent of one node (the migranet-probe DaemonSet runs one beside every virt-handler,
with hostPID): from the node's virt-handler migration0, it probes every other node's, round after
round, and writes what it finds to the node's PathReport (kubectl get pathreports).

Exit status: 0 stopped cleanly, 1 failed, 2 bad usage.

Flags:
`

// probeFlags are the agent's flags, checked by check.
type probeFlags struct {
	kubeconfig, agentSelector, healthAddr string
	cfg                                   nodeagent.Config
	zap                                   zap.Options
}

func parseProbeFlags(args []string) (*probeFlags, *flag.FlagSet, error) {
	f := &probeFlags{}
	fs := newFlagSet("migranet probe")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty means in-cluster configuration")
	fs.StringVar(&f.cfg.Node, "node", os.Getenv("NODE_NAME"), "the node this agent probes from (default: $NODE_NAME)")
	registerKubeVirtNamespace(fs, &f.cfg.KubeVirtNamespace, "namespace of virt-handler's pods")
	fs.StringVar(&f.cfg.AgentNamespace, "agent-namespace", envOr("POD_NAMESPACE", "migranet-probe"), "namespace of the agents' pods (default: $POD_NAMESPACE)")
	fs.StringVar(&f.agentSelector, "agent-selector", "app.kubernetes.io/name=migranet-probe", "label selector of the agents' pods: a node is probed only while its agent's pod is Ready")
	fs.StringVar(&f.cfg.ProcRoot, "proc", "/proc", "the host's /proc (the agent runs with hostPID), where virt-handler's network namespace is found")
	fs.IntVar(&f.cfg.Port, "port", 4797, "UDP port the agents answer probes on, on migration0")
	fs.DurationVar(&f.cfg.Interval, "interval", 20*time.Second, "one round over every peer per interval (longer when --max-rate says so)")
	fs.DurationVar(&f.cfg.Timeout, "timeout", time.Second, "how long a probe waits for its reply")
	fs.IntVar(&f.cfg.Tries, "tries", 3, "how many lost probes in a row fail a path")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":9797", "address of /healthz, /readyz and /metrics (ready once the probe socket answers on migration0: peers probe only Ready agents)")
	fs.Float64Var(&f.cfg.MaxRate, "max-rate", 200, "at most this many probes a second in a round (two per healthy peer)")
	fs.BoolVar(&f.cfg.KeepNeighbours, "keep-neighbour-entries", false, "leave the neighbour entries the probes make (one per peer in the node's one table, shared with every pod); by default the agent removes each after its peer's exchanges, which needs CAP_NET_ADMIN")
	fs.DurationVar(&f.cfg.NeighbourGrace, "neighbour-grace", nodeagent.DefaultNeighbourGrace, "how long a peer's neighbour entry is left after the last exchange with it before the agent removes it")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(zfs)
	zfs.VisitAll(func(fl *flag.Flag) { fs.Var(fl.Value, fl.Name, fl.Usage) })
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("migranet probe takes no arguments, got %q", fs.Args())
	}
	sel, err := f.check()
	if err != nil {
		return nil, fs, err
	}
	f.cfg.AgentSelector = sel
	return f, fs, nil
}

// check validates the flags, every problem named by its flag with the fix.
func (f *probeFlags) check() (labels.Selector, error) {
	var errs field.ErrorList
	c := &f.cfg
	if c.Node == "" {
		errs = append(errs, field.Required(field.NewPath("--node"), "name the node (the DaemonSet sets $NODE_NAME from spec.nodeName)"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.Invalid(field.NewPath("--port"), c.Port, "must be a UDP port, 1-65535"))
	}
	if c.Timeout < 10*time.Millisecond || c.Timeout > 10*time.Second {
		errs = append(errs, field.Invalid(field.NewPath("--timeout"), c.Timeout.String(), "must be between 10ms and 10s"))
	}
	if c.Tries < 1 || c.Tries > 10 {
		errs = append(errs, field.Invalid(field.NewPath("--tries"), c.Tries, "must be between 1 and 10"))
	}
	if min := time.Duration(c.Tries+2) * c.Timeout; c.Interval < min || c.Interval > time.Hour {
		errs = append(errs, field.Invalid(field.NewPath("--interval"), c.Interval.String(),
			fmt.Sprintf("must be at least (--tries + 2) × --timeout = %s, so a failing peer's check fits in a round, and at most 1h", min)))
	}
	if c.Interval%time.Second != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--interval"), c.Interval.String(), "must be whole seconds (the report carries it in seconds)"))
	}
	if c.NeighbourGrace < 10*time.Millisecond || c.NeighbourGrace > time.Minute {
		errs = append(errs, field.Invalid(field.NewPath("--neighbour-grace"), c.NeighbourGrace.String(), "must be between 10ms and 1m"))
	}
	if c.MaxRate <= 0 || c.MaxRate > 100000 {
		errs = append(errs, field.Invalid(field.NewPath("--max-rate"), c.MaxRate, "must be above 0 and at most 100000 probes a second"))
	}
	sel, err := labels.Parse(f.agentSelector)
	if err != nil || sel.Empty() {
		errs = append(errs, field.Invalid(field.NewPath("--agent-selector"), f.agentSelector, "must be a non-empty label selector, e.g. app.kubernetes.io/name=migranet-probe"))
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return sel, nil
}

func runProbe(name string, args []string, stdout, stderr io.Writer) int {
	f, fs, err := parseProbeFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, asTyped(name, probeUsage))
		printDefaults(stdout, fs)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s probe: %v\n", name, err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(stderr)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := startProbe(ctx, f); err != nil {
		fmt.Fprintf(stderr, "%s probe: %v\n", name, err)
		return 1
	}
	return 0
}

// startProbe runs the agent: a cache of virt-handler pods, agent pods, the migration policy and
// its own node, then rounds.
func startProbe(ctx context.Context, f *probeFlags) error {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	handlers := labels.SelectorFromSet(labels.Set{settings.VirtHandlerLabel: settings.VirtHandlerValue})
	pods, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Namespaces: map[string]cache.Config{
			f.cfg.KubeVirtNamespace: {LabelSelector: handlers},
			f.cfg.AgentNamespace:    {LabelSelector: f.cfg.AgentSelector},
		}},
		// The node's migration budget: the migration policy, and the node's own labels.
		&v1beta1.Setting{}: {Field: fields.OneTermEqualSelector("metadata.name", v1beta1.MigrationPolicy)},
		&corev1.Node{}:     {Field: fields.OneTermEqualSelector("metadata.name", f.cfg.Node)},
	}})
	if err != nil {
		return err
	}
	changed := make(chan struct{}, 1)
	for _, obj := range []client.Object{&v1beta1.Setting{}, &corev1.Node{}} {
		inf, err := pods.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		poke := func(any) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: poke, DeleteFunc: poke,
			UpdateFunc: func(_, o any) { poke(o) }}); err != nil {
			return err
		}
	}
	go func() { _ = pods.Start(ctx) }()
	if !pods.WaitForCacheSync(ctx) {
		return errors.New("the pod cache never synced")
	}
	f.cfg.Version = version()
	reg := prometheus.NewRegistry()
	if f.cfg.Metrics, err = nodeagent.NewMetrics(reg); err != nil {
		return err
	}
	a := &nodeagent.Agent{Config: f.cfg, Client: c, Pods: pods, Budget: pods, BudgetChanged: changed}
	ln, err := net.Listen("tcp", f.healthAddr)
	if err != nil {
		return fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Live while its rounds keep finishing (nodeagent.Watchdog): a stuck agent is restarted.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Live(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Ready(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	return a.Run(ctrl.LoggerInto(ctx, ctrl.Log.WithName("probe")))
}
