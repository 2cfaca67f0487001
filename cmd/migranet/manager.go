package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/clusterread"
	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/certs"
	"github.com/migranet/migranet/webhook/migrationcheck"
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
	fs.StringVar(&f.kubevirtNamespace, "kubevirt-namespace", settings.DefaultKubeVirtNamespace, "namespace of the KubeVirt CR and of the migration network's NetworkAttachmentDefinition")
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
func runManager(args []string, stdout, stderr io.Writer, dev bool) int {
	f, fs, err := parseManagerFlags(args, dev)
	if errors.Is(err, flag.ErrHelp) {
		usage := managerUsage
		if dev {
			usage = devUsage
		}
		fmt.Fprint(stdout, usage)
		printDefaults(stdout, fs)
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s -h' for its flags.\n", fs.Name(), err, fs.Name())
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(stderr)))
	d := &drain{delay: f.shutdownDelay}
	if err := startManager(d.context(), f, dev, d); err != nil {
		fmt.Fprintln(stderr, "migranet:", err)
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
	log := ctrl.Log.WithName("setup")
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
	webhookServer := ctrlwebhook.Options{Host: f.webhookHost, Port: f.webhookPort, CertDir: f.certDir}
	var rotator *certs.Rotator
	if f.certs.SecretName != "" {
		if rotator, err = certs.New(cfg, f.certs); err != nil {
			return fmt.Errorf("webhook certificate: %w", err)
		}
		webhookServer.TLSOpts = []func(*tls.Config){rotator.ConfigureTLS}
	}
	cacheOpts := webhook.CacheOptions(f.kubevirtNamespace)
	cacheOpts.ByObject[&v1beta1.PathReport{}] = netcontroller.PathReportCache()
	cacheOpts.ByObject[&appsv1.DaemonSet{}] = netcontroller.ProbeDaemonSetCache(f.probeNamespace)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress:    f.metricsAddr,
			SecureServing:  true,
			FilterProvider: filters.WithAuthenticationAndAuthorization,
		},
		WebhookServer:           ctrlwebhook.NewServer(webhookServer),
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "migranet.io",
		LeaderElectionNamespace: f.namespace,
		// A replica that stops cleanly hands the controllers over at once instead of after a
		// lease duration: every code path returns from Start once the context ends.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		GracefulShutdownTimeout:       ptr(15 * time.Second),
		Cache:                         cacheOpts,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	snapshots := &settings.Store{}
	settingsMetrics, err1 := statuswrite.NewMetrics(ctrlmetrics.Registry)
	netMetrics, err2 := netcontroller.NewMetrics(ctrlmetrics.Registry)
	webhookMetrics, err3 := webhook.NewMetrics(ctrlmetrics.Registry)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(buildInfoCollector()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if rotator != nil {
		if err := ctrlmetrics.Registry.Register(rotator.ExpiryCollector()); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	if err := (&settingscontroller.Controller{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerSettings),
		KubeVirtNamespace: f.kubevirtNamespace, APIReader: mgr.GetAPIReader(), Metrics: settingsMetrics,
		Guard: &settingscontroller.GuardParams{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: f.namespace, NADNamespace: f.kubevirtNamespace},
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the settings controller: %w", err)
	}
	if err := (&settingscontroller.PolicyController{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the migration-policy controller: %w", err)
	}
	observer := &netcontroller.Observer{Client: mgr.GetClient(), KubeVirtNamespace: f.kubevirtNamespace, Snapshots: snapshots}
	if err := observer.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the network observer: %w", err)
	}
	if err := (&netcontroller.Controller{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerNetwork),
		KubeVirtNamespace: f.kubevirtNamespace,
		APIReader:         mgr.GetAPIReader(), WhereaboutsNamespace: f.whereaboutsNamespace, Metrics: netMetrics}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the network controller: %w", err)
	}
	if err := mgr.Add(&netcontroller.Offenders{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerGuard), KubeVirtNamespace: f.kubevirtNamespace,
		Interval: f.guardScan, Metrics: netMetrics}); err != nil {
		return fmt.Errorf("setting up the offender scan: %w", err)
	}
	// The migration paths' health, published on every replica by the path observer from the probe
	// agents' PathReports, read by admission (rule pathHealthy) and written to the setting's status
	// (Healthy, paths) by the leader.
	paths := &settings.PathStore{}
	pathsChanged := make(chan event.GenericEvent, 1)
	pathObserver := &netcontroller.PathObserver{Client: mgr.GetClient(), KubeVirtNamespace: f.kubevirtNamespace, Paths: paths, Changed: pathsChanged}
	if err := pathObserver.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the path observer: %w", err)
	}
	if err := (&netcontroller.PathStatus{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerPaths),
		KubeVirtNamespace: f.kubevirtNamespace, Paths: paths, Observer: pathObserver, Changed: pathsChanged,
		Metrics: netMetrics}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the path status writer: %w", err)
	}
	if err := (&netcontroller.ProbePlacement{Client: mgr.GetClient(), Namespace: f.probeNamespace,
		KubeVirtNamespace: f.kubevirtNamespace}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the probe agent's placement: %w", err)
	}
	pods, err := migrationcheck.NewPodCache(mgr)
	if err != nil {
		return err
	}
	if err := webhook.Setup(ctx, mgr, webhook.Options{KubeVirtNamespace: f.kubevirtNamespace, Snapshots: snapshots, Pods: pods, Paths: paths,
		Metrics: webhookMetrics, Recorder: mgr.GetEventRecorderFor("migranet-webhook")}); err != nil {
		return fmt.Errorf("setting up webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	synced := &webhook.SyncedCheck{Cache: webhook.AllSynced{mgr.GetCache(), pods}}
	if err := mgr.Add(synced); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informers", synced.Check); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("network-observed", observer.ObservedCheck); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("shutdown", d.check); err != nil {
		return err
	}
	if rotator != nil {
		if err := mgr.Add(rotator); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("certificates", rotator.ReadyCheck); err != nil {
			return err
		}
	}
	if local != nil {
		if err := mgr.Add(local); err != nil {
			return err
		}
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return settingscontroller.EnsureOwned(ctx, mgr.GetClient())
	})); err != nil {
		return err
	}
	b := readBuildInfo()
	log.Info("starting manager", "version", b.Version, "commit", b.Commit, "goVersion", b.GoVersion, "kubevirtNamespace", f.kubevirtNamespace, "dev", dev)
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
