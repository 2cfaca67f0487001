package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/migranet/migranet/netcontroller"
	settingscontroller "github.com/migranet/migranet/settings/controller"
	"github.com/migranet/migranet/settings/decider"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/statuswrite"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/webhook"
	"github.com/migranet/migranet/webhook/certs"
	"github.com/migranet/migranet/webhook/migrationcheck"
)

// newManager is the controller-runtime manager of the flags: its cache (what the webhooks and
// the controllers read), metrics and webhook servers, health probes and leader election.
func newManager(cfg *rest.Config, scheme *runtime.Scheme, f *managerFlags, rotator *certs.Rotator, source decider.Decider) (ctrl.Manager, error) {
	webhookServer := ctrlwebhook.Options{Host: f.webhookHost, Port: f.webhookPort, CertDir: f.certDir}
	if rotator != nil {
		webhookServer.TLSOpts = []func(*tls.Config){rotator.ConfigureTLS}
	}
	var hc client.Object
	if h, ok := source.(decider.HCO); ok {
		hc = h.Field.New()
	}
	cacheOpts := webhook.CacheOptions(f.kubevirtNamespace, hc)
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
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}

// managerMetrics are the collectors of the parts, registered once with the manager's registry.
type managerMetrics struct {
	settings *statuswrite.Metrics
	network  *netcontroller.Metrics
	webhook  *webhook.Metrics
}

func registerMetrics(rotator *certs.Rotator) (*managerMetrics, error) {
	m := &managerMetrics{}
	var err1, err2, err3 error
	m.settings, err1 = statuswrite.NewMetrics(ctrlmetrics.Registry)
	m.network, err2 = netcontroller.NewMetrics(ctrlmetrics.Registry)
	m.webhook, err3 = webhook.NewMetrics(ctrlmetrics.Registry)
	if err := errors.Join(err1, err2, err3, ctrlmetrics.Registry.Register(buildInfoCollector())); err != nil {
		return nil, err
	}
	if rotator != nil {
		if err := ctrlmetrics.Registry.Register(rotator.ExpiryCollector()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// setupParts wires migranet's parts into mgr: the settings controllers, the network controller
// and its observers, the path health, the probe agents' placement and the webhooks. It returns
// the network observer, whose first observation readiness waits for.
func setupParts(ctx context.Context, mgr ctrl.Manager, f *managerFlags, m *managerMetrics, source decider.Decider) (*netcontroller.Observer, error) {
	guard := &settingscontroller.GuardParams{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: f.namespace, NADNamespace: f.kubevirtNamespace}
	if err := (&settingscontroller.Controller{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerSettings),
		KubeVirtNamespace: f.kubevirtNamespace, APIReader: mgr.GetAPIReader(), Metrics: m.settings, Guard: guard, Decider: source,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the settings controller (%s mode): %w", source.Mode(), err)
	}
	if err := (&settingscontroller.PolicyController{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the migration-policy controller: %w", err)
	}
	snapshots := &health.Store{}
	observer := &netcontroller.Observer{Client: mgr.GetClient(), KubeVirtNamespace: f.kubevirtNamespace, Snapshots: snapshots}
	if err := observer.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the network observer: %w", err)
	}
	if err := (&netcontroller.Controller{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerNetwork),
		KubeVirtNamespace: f.kubevirtNamespace,
		APIReader:         mgr.GetAPIReader(), WhereaboutsNamespace: f.whereaboutsNamespace, Metrics: m.network}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the network controller: %w", err)
	}
	if err := mgr.Add(&netcontroller.Offenders{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerGuard), KubeVirtNamespace: f.kubevirtNamespace,
		Interval: f.guardScan, Metrics: m.network}); err != nil {
		return nil, fmt.Errorf("setting up the offender scan: %w", err)
	}
	// The migration paths' health, published on every replica by the path observer from the probe
	// agents' PathReports, read by admission (rule pathHealthy) and written to the setting's status
	// (Healthy, paths) by the leader.
	paths := &health.PathStore{}
	pathsChanged, pathsPublished := make(chan event.GenericEvent, 1), make(chan event.GenericEvent, 1)
	pathObserver := &netcontroller.PathObserver{Client: mgr.GetClient(), KubeVirtNamespace: f.kubevirtNamespace, Paths: paths,
		Changed: pathsChanged, Published: pathsPublished}
	if err := pathObserver.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the path observer: %w", err)
	}
	if err := (&netcontroller.PathStatus{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(statuswrite.FieldManagerPaths),
		KubeVirtNamespace: f.kubevirtNamespace, Paths: paths, Observer: pathObserver, Changed: pathsChanged,
		Metrics: m.network}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the path status writer: %w", err)
	}
	// The leader aborts a streaming pre-copy migration whose path fails (rule runningPathHealthy).
	if err := (&netcontroller.PathAbort{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("migranet-" + netcontroller.PathAbortControllerName),
		KubeVirtNamespace: f.kubevirtNamespace, Paths: paths, Published: pathsPublished}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the path-abort controller: %w", err)
	}
	if err := (&netcontroller.ProbePlacement{Client: mgr.GetClient(), Namespace: f.probeNamespace,
		KubeVirtNamespace: f.kubevirtNamespace}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the probe agent's placement: %w", err)
	}
	pods, err := migrationcheck.NewPodCache(mgr)
	if err != nil {
		return nil, err
	}
	if err := webhook.Setup(ctx, mgr, webhook.Options{KubeVirtNamespace: f.kubevirtNamespace, Snapshots: snapshots, Pods: pods, Paths: paths,
		Metrics: m.webhook, Recorder: mgr.GetEventRecorderFor("migranet-webhook"), Mode: source.Mode(), Namespace: f.namespace}); err != nil {
		return nil, fmt.Errorf("setting up webhooks: %w", err)
	}
	synced := &webhook.SyncedCheck{Cache: webhook.AllSynced{mgr.GetCache(), pods}}
	if err := mgr.Add(synced); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", synced.Check); err != nil {
		return nil, err
	}
	return observer, nil
}

// setupRunnables adds the health and readiness checks and what runs beside the parts: the
// certificate rotator, the dev setup and the creation of migranet's own settings.
func setupRunnables(mgr ctrl.Manager, d *drain, observer *netcontroller.Observer, rotator *certs.Rotator, local *devSetup) error {
	checks := []struct {
		name  string
		check healthz.Checker
		ready bool
	}{
		{"ping", healthz.Ping, false},
		{"webhook", mgr.GetWebhookServer().StartedChecker(), true},
		{"network-observed", observer.ObservedCheck, true},
		{"shutdown", d.check, true},
	}
	if rotator != nil {
		checks = append(checks, struct {
			name  string
			check healthz.Checker
			ready bool
		}{"certificates", rotator.ReadyCheck, true})
	}
	for _, c := range checks {
		add := mgr.AddReadyzCheck
		if !c.ready {
			add = mgr.AddHealthzCheck
		}
		if err := add(c.name, c.check); err != nil {
			return err
		}
	}
	var runnables []manager.Runnable
	if rotator != nil {
		runnables = append(runnables, rotator)
	}
	if local != nil {
		runnables = append(runnables, local)
	}
	runnables = append(runnables, manager.RunnableFunc(func(ctx context.Context) error {
		return settingscontroller.EnsureOwned(ctx, mgr.GetClient())
	}))
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
}
