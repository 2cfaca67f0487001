package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings/clusterread"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/webhook/certs"
)

// managerFlags are the manager's command-line options.
type managerFlags struct {
	kubeconfig           string
	namespace            string
	kubevirtNamespace    string
	whereaboutsNamespace string
	probeNamespace       string
	webhookHost          string
	webhookPort          int
	certDir              string
	certs                certs.Options
	metricsAddr          string
	probeAddr            string
	leaderElect          bool
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	shutdownDelay        time.Duration
	guardScan            time.Duration
	harvester            string
	hco                  string
	qps                  float64
	burst                int
	zap                  zap.Options
}

// managerUsage is the help of migranet manager, followed by its flags.
const managerUsage = `Usage: migranet manager [flags]

Runs migranet's controllers and admission webhooks, in the cluster (the pod's service account)
or, given --kubeconfig or $KUBECONFIG, against that cluster. Webhooks are served by every
replica; controllers run on the elected leader only (--leader-elect).

Exit status: 0 stopped cleanly, 1 failed, 2 bad usage.

Flags:
`

// devUsage is the help of migranet dev, followed by its flags.
const devUsage = `Usage: migranet dev [flags]

Runs the manager out of cluster, for development, against --kubeconfig (default $KUBECONFIG):
it installs the CRDs and guard policies, serves the webhooks on 127.0.0.1 with a self-signed
certificate and registers them by URL (Validating- and MutatingWebhookConfiguration ` + devWebhookConfiguration + `).
Leader election is off and shutdown is immediate unless flags say otherwise.

Exit status: 0 stopped cleanly, 1 failed, 2 bad usage.

Flags:
`

// parseManagerFlags parses the arguments of migranet manager (dev: of migranet dev) and returns
// them with the FlagSet, whose defaults the usage lists.
func parseManagerFlags(args []string, dev bool) (*managerFlags, *flag.FlagSet, error) {
	f := &managerFlags{}
	name := "migranet manager"
	if dev {
		name = "migranet dev"
	}
	fs := newFlagSet(name)
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty means in-cluster configuration")
	fs.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "migranet-system"), "namespace migranet runs in: its leader-election lease and webhook certificate Secret live there (default: $POD_NAMESPACE)")
	registerKubeVirtNamespace(fs, &f.kubevirtNamespace, "namespace of the KubeVirt CR and of the migration network's NetworkAttachmentDefinition")
	fs.StringVar(&f.whereaboutsNamespace, "whereabouts-namespace", "kube-system", "namespace where whereabouts keeps its IPPools (stale pools of previous migration ranges are deleted there)")
	fs.StringVar(&f.probeNamespace, "probe-namespace", netcontroller.DefaultProbeNamespace, "namespace of the probe agent's DaemonSet "+netcontroller.ProbeDaemonSet+", which the leader places as KubeVirt places virt-handler")
	fs.StringVar(&f.webhookHost, "webhook-host", "", "address the webhook server binds (default all; dev: 127.0.0.1)")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "port of the webhook server (dev: 0 picks a free one)")
	fs.StringVar(&f.certDir, "cert-dir", "", "directory with tls.crt and tls.key for the webhook server (dev: generated when empty)")
	f.certs.BindFlags(fs)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "address of the authenticated HTTPS metrics endpoint; 0 disables it")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&f.leaderElect, "leader-elect", !dev, "elect a leader among replicas before running controllers (webhooks run on every replica)")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a replica waits, after the leader stops renewing, before it takes over the controllers")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps retrying to renew before it gives up leadership (and exits)")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "interval between leader-election attempts")
	fs.DurationVar(&f.shutdownDelay, "shutdown-delay", 5*time.Second, "after SIGTERM, how long the replica stays up unready, still serving webhooks, before it stops (lets the Service drain it; dev: 0)")
	fs.DurationVar(&f.guardScan, "guard-scan-interval", 5*time.Minute, "how often the leader lists every pod (metadata, paged) and VMI for ones attached to the migration network besides virt-handlers (also at start and when the NAD changes)")
	fs.StringVar(&f.harvester, "harvester", decider.FlagAuto, "Harvester mode: on, off, or auto (on when Harvester's setting settings.harvesterhci.io/vm-migration-network exists at start-up); "+
		"in Harvester mode Harvester's setting decides the migration network, migranet mirrors it into its own and never writes the NAD or the KubeVirt CR")
	fs.StringVar(&f.hco, "hco", decider.FlagAuto, "HCO mode (OpenShift Virtualization, OKD): on, off, or auto (on when the KubeVirt CR has a controller owner of kind HyperConverged at start-up); "+
		"in HCO mode migranet never writes the KubeVirt CR: it writes its network into the HyperConverged CR's liveMigrationConfig.network and mirrors a network chosen there")
	fs.Float64Var(&f.qps, "kube-api-qps", 50, "client-side rate limit of requests to the API server, per second")
	fs.IntVar(&f.burst, "kube-api-burst", 100, "burst allowed above --kube-api-qps")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.Development = dev
	f.zap.BindFlags(zfs)
	zfs.VisitAll(func(fl *flag.Flag) { fs.Var(fl.Value, fl.Name, fl.Usage) })
	if dev {
		f.webhookHost, f.webhookPort, f.metricsAddr, f.probeAddr = "127.0.0.1", 0, "0", "127.0.0.1:0"
		f.shutdownDelay = 0
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("%s takes no arguments, got %q", name, fs.Args())
	}
	f.certs.Namespace = f.namespace
	if f.certs.SecretName != "" && dev {
		return nil, fs, errors.New("`migranet dev` serves the webhook certificate from --cert-dir; --cert-secret is for `migranet manager`")
	} else if f.certs.SecretName != "" && f.certDir != "" {
		return nil, fs, errors.New("--cert-secret and --cert-dir exclude each other: the certificate comes from the Secret or from the folder")
	}
	if err := f.certs.CheckFlags(); err != nil {
		return nil, fs, err
	}
	return f, fs, nil
}

// runManager runs migranet manager (dev: migranet dev) until it stops and returns its exit code.
func runManager(name string, args []string, stdout, stderr io.Writer, dev bool) int {
	f, fs, err := parseManagerFlags(args, dev)
	if errors.Is(err, flag.ErrHelp) {
		usage := managerUsage
		if dev {
			usage = devUsage
		}
		fmt.Fprint(stdout, asTyped(name, usage))
		printDefaults(stdout, fs)
		return 0
	} else if err != nil {
		fmt.Fprint(stderr, asTyped(name, fmt.Sprintf("%s: %v\nRun '%s -h' for its flags.\n", fs.Name(), err, fs.Name())))
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(stderr)))
	d := &drain{delay: f.shutdownDelay}
	if err := startManager(d.context(), f, dev, d); err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}

// restConfig is the in-cluster configuration, or kubeconfig's when it is not empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// startManager sets up the manager with every controller and webhook and runs it until ctx ends.
func startManager(ctx context.Context, f *managerFlags, dev bool, d *drain) error {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	cfg.UserAgent = "migranet"
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	scheme, err := clusterread.NewScheme()
	if err != nil {
		return err
	}
	var local *devSetup
	if dev {
		if local, err = prepareDev(ctx, cfg, scheme, f); err != nil {
			return err
		}
	}
	var rotator *certs.Rotator
	if f.certs.SecretName != "" {
		if rotator, err = certs.New(cfg, f.certs); err != nil {
			return fmt.Errorf("webhook certificate: %w", err)
		}
	}
	// The modes are chosen before the manager exists: HCO mode caches the HyperConverged CR of the
	// version the cluster serves.
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	choice, err := decider.Detect(ctx, decider.Flags{Harvester: f.harvester, HCO: f.hco}, direct, direct.RESTMapper(), f.kubevirtNamespace)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("who decides the migration network", "mode", choice.Decider.Mode(), "why", choice.Why)
	mgr, err := newManager(cfg, scheme, f, rotator, choice.Decider)
	if err != nil {
		return err
	}
	m, err := registerMetrics(rotator)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	observer, err := setupParts(ctx, mgr, f, m, choice.Decider)
	if err != nil {
		return err
	}
	if err := setupRunnables(mgr, d, observer, rotator, local); err != nil {
		return err
	}
	b := readBuildInfo()
	ctrl.Log.WithName("setup").Info("starting manager", "version", b.Version, "commit", b.Commit, "goVersion", b.GoVersion,
		"kubevirtNamespace", f.kubevirtNamespace, "dev", dev)
	return mgr.Start(ctx)
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// envOr returns the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
