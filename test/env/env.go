package env

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/sim"
)

// ManagerUser is the user migranet authenticates as in the local environment: the manifests'
// ServiceAccount.
const ManagerUser = ServiceAccountUser

// AuditManagerRequests is an audit policy that logs, at Metadata level, only the requests
// migranet itself makes.
const AuditManagerRequests = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [` + ManagerUser + `]
- level: None
`

// Options configure an environment.
type Options struct {
	// Dir holds everything the environment writes; wiped at start.
	Dir string
	// Nodes to create; cluster.DefaultNodes(3) when nil.
	Nodes []cluster.NodeSpec
	// Progress receives one line per startup step; nil discards.
	Progress io.Writer
	// AuditPolicy is passed to the API server (see cluster.Options).
	AuditPolicy string
	// SimulatedKubeVirt leaves KubeVirt's virt-api and virt-controller out: controller-gen
	// KubeVirt CRDs, no KubeVirt admission, and migrations that nothing drives. By default the
	// environment runs KubeVirt's own (cluster.KubeVirtVersion) with the virt-handler stand-in.
	SimulatedKubeVirt bool
	// Replicas of the manager to run; DefaultReplicas (the Deployment's count) when 0.
	Replicas int
	// NodeNetworks: whether the nodes get real networks and the real CNI plugins (see
	// NodeNetworksMode); NodeNetworksRequired when empty.
	NodeNetworks NodeNetworksMode
	// ProbeArgs follow the probe agent pods' own arguments (with real node networks, the agents
	// run as processes); ProbeArgsFor the nodes when nil.
	ProbeArgs []string
	// Binary is the migranet binary the replicas and the probe agents run; empty builds the work
	// tree's. Release is what gets installed (the work tree's manifests when zero). The upgrade
	// suite starts both from the previous release.
	Binary  string
	Release Release
	// Harvester makes the cluster a Harvester stand-in (harvester.go): Harvester's CRDs and
	// vm-migration-network setting, and a simulator of Harvester's controller that renders it.
	// migranet's manager then chooses Harvester mode by itself (--harvester=auto).
	Harvester bool
	// HCO makes the cluster an HCO stand-in (hco.go): HCO's HyperConverged CRD and CR, the KubeVirt
	// CR kubevirt-kubevirt-hyperconverged it owns, and a simulator of HCO's KubeVirt handler.
	// migranet's manager then chooses HCO mode by itself (--hco=auto) unless ManagerArgs say
	// otherwise.
	HCO bool
	// ManagerArgs are added to every replica's arguments (e.g. --hco=off).
	ManagerArgs []string
	// HandlerBandwidth caps each migration's stream between real migration0 links, in bytes per
	// second, and HandlerDirtyRate is how fast the guests dirty memory while they migrate
	// (sim.VirtHandlerStandIn.StreamBandwidth, DirtyRate); HandlerStreamBandwidth and
	// HandlerDirtyRate when 0.
	HandlerBandwidth, HandlerDirtyRate int64
	// MigrationProxies: whether those streams cross the patched migration proxy pair
	// (ProxiesRequired when empty).
	MigrationProxies MigrationProxiesMode
	// ReportsByCaller, on simulated node networks, leaves the probe agents' stand-in out: their
	// pods run (kwok) and the caller writes every PathReport, as the control-plane scale run's
	// synthetic agents do (sim.ProbeAgents.PodClient gives a client that may).
	ReportsByCaller bool
}

// DefaultProbeArgs make the local cluster's probe agents quicker than the DaemonSet's 20 s: a
// round every 4 s; a probe still waits 600 ms, three times, before a path fails — a busy
// 2-core machine (a storm of admissions beside the agents) delays replies by hundreds of ms, and a
// path the agents fail refuses migrations.
var DefaultProbeArgs = []string{"--interval=4s", "--timeout=600ms", "--tries=3"}

// Env is a running environment.
type Env struct {
	*cluster.Cluster
	// Manager is the first replica; Replicas all of them.
	Manager  *Manager
	Replicas []*Manager
	// Service stands in for the webhook Service in front of the manager replicas.
	Service *sim.Service
	// NodeNetworks are the nodes' real networks; nil when the plugins are simulated.
	NodeNetworks *sim.NodeNetworks
	// ProbeAgents run the probe agent pods' processes (on simulated node networks, report the
	// paths not measured instead).
	ProbeAgents *sim.ProbeAgents
	progress    io.Writer
	harvester   bool
	// HCO is the stand-in of HCO's KubeVirt handler; nil unless Options.HCO.
	HCO *sim.HCOKubeVirtHandler
	// HandlerMetricsURL serves what the virt-handlers would report of the VMIs in Prometheus'
	// text format (sim.VirtHandlerStandIn.ServeHTTP), as a Prometheus server's /federate would;
	// "" when the stand-in does not run.
	HandlerMetricsURL string
	kubeVirtName      string
	managerArgs       []string
	stream            [2]int64 // the stand-in's stream bandwidth and dirty rate
	// Handler is the virt-handler stand-in (nil when KubeVirt is simulated); MigrationProxies the
	// lab's patched migration proxies its streams cross (nil: plain TCP, plainWhy says why).
	Handler          *sim.VirtHandlerStandIn
	MigrationProxies *sim.MigrationProxies
	plainWhy         string
	stopSims         context.CancelFunc
	simsDone         chan struct{}
	closeMetrics     func()
	release          Release // what Reinstall applies
	reportsByCaller  bool    // Options.ReportsByCaller
}

// Start brings the environment up; on error everything already started is stopped.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Nodes == nil {
		opts.Nodes = cluster.DefaultNodes(3)
	}
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	bins, err := cluster.BuildBinaries(ctx)
	if err != nil {
		return nil, err
	}
	binary := opts.Binary
	if binary == "" {
		if binary, err = BuildMigranet(ctx, filepath.Join(opts.Dir+"-bin")); err != nil {
			return nil, err
		}
	}
	bootstrap := func(ctx context.Context, c *cluster.Cluster) error { return cluster.BootstrapKubeVirt(ctx, c.Client) }
	var hco *hcoInstall
	if opts.HCO {
		hco = &hcoInstall{}
		bootstrap = hco.bootstrap
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Dir: opts.Dir, Binaries: bins, Progress: opts.Progress, AuditPolicy: opts.AuditPolicy,
		KubeVirt: !opts.SimulatedKubeVirt, BootstrapKubeVirt: bootstrap,
	})
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: c, progress: opts.Progress, release: opts.Release, harvester: opts.Harvester,
		kubeVirtName: cluster.KubeVirtName, managerArgs: opts.ManagerArgs, reportsByCaller: opts.ReportsByCaller,
		stream: [2]int64{cmp.Or(opts.HandlerBandwidth, HandlerStreamBandwidth), cmp.Or(opts.HandlerDirtyRate, HandlerDirtyRate)}}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if opts.Release.Manifests != "" {
		// Another release's install brings its own CRDs, applied by kubectl as an admin's are.
		if err := c.DeleteCRDsOfGroup(ctx, v1beta1.GroupVersion.Group); err != nil {
			return nil, err
		}
	}
	if err := bootstrap(ctx, c); err != nil {
		return nil, err
	}
	if hco != nil {
		e.kubeVirtName = sim.HCOKubeVirtName
		e.HCO = &sim.HCOKubeVirtHandler{Namespace: cluster.KubeVirtNamespace, Base: hco.base}
	}
	if opts.Harvester {
		if err := startHarvester(ctx, c); err != nil {
			return nil, err
		}
	}
	var simulated string
	if e.NodeNetworks, simulated, err = startNodeNetworks(ctx, c, opts.NodeNetworks, len(opts.Nodes), opts.Progress); err != nil {
		return nil, err
	}
	if opts.ProbeArgs == nil {
		var why string
		if opts.ProbeArgs, why = ProbeArgsFor(len(opts.Nodes)); why != "" && e.NodeNetworks != nil {
			fmt.Fprintln(opts.Progress, "env: "+why)
		}
	}
	e.plainWhy = "none: KubeVirt is simulated (no virt-handler stand-in)"
	if !opts.SimulatedKubeVirt {
		if e.MigrationProxies, e.plainWhy, err = e.startProxies(ctx, opts.MigrationProxies, opts.Progress); err != nil {
			return nil, err
		}
	}
	if err := e.startSimulators(!opts.SimulatedKubeVirt, binary, opts.ProbeArgs, simulated); err != nil {
		return nil, err
	}
	if err := cluster.CreateNodes(ctx, c.Client, opts.Nodes); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "env: %d kwok nodes Ready\n", len(opts.Nodes))
	if err := e.WaitKubeVirtAvailable(ctx, time.Minute); err != nil {
		return nil, err
	}
	if opts.Replicas == 0 {
		opts.Replicas = DefaultReplicas
	}
	if err := e.startManager(ctx, binary, opts.Dir, opts.Replicas); err != nil {
		return nil, err
	}
	if err := e.Manager.WaitOwnedSettings(ctx, c.Client); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "env: migranet manager ready (webhooks at %s)\n", e.Manager.WebhookURL())
	return e, nil
}

// Stop ends the manager, the simulators and the control plane.
func (e *Env) Stop() {
	e.StopReplicas()
	if e.Service != nil {
		e.Service.Close()
	}
	if e.closeMetrics != nil {
		e.closeMetrics()
	}
	if e.stopSims != nil {
		e.stopSims()
		<-e.simsDone
	}
	if e.MigrationProxies != nil {
		e.MigrationProxies.Close()
	}
	if e.NodeNetworks != nil {
		_ = e.NodeNetworks.Close(context.Background())
	}
	e.Cluster.Stop()
}

// HandlerMigrationTime is how long the virt-handler stand-in lets a migration run whose path the
// model judges (simulated node networks, the pod network, simulated VLAN tags).
const HandlerMigrationTime = 500 * time.Millisecond

// The suites' stream defaults: a 128Mi VMI streams its memory in about half a second (128 MiB at
// 256 MiB/s, then the 2 MiB it dirtied meanwhile), about as long as HandlerMigrationTime, so the
// suites' many migrations cost about what they did before the streams.
const (
	HandlerStreamBandwidth int64 = 256 << 20
	HandlerDirtyRate       int64 = 4 << 20
)

// startSimulators runs the virt-operator and Multus simulators in this process, and the
// virt-handler stand-in when KubeVirt's controllers run. simulated says why the node networks
// are simulated ("" when real): the agents' stand-in then reports the paths not measured.
func (e *Env) startSimulators(handler bool, binary string, probeArgs []string, simulated string) error {
	logFile, err := os.Create(filepath.Join(e.Dir, "simulators.log"))
	if err != nil {
		return err
	}
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logFile, time.Now().Format(time.RFC3339Nano), prefix, args) }, funcr.Options{})
	log.SetLogger(logr.Discard()) // controller-runtime's global logger; the simulators log through theirs
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Client.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
		// Controller names are checked unique per process (for their metrics, served by nobody
		// here): make bench starts one environment after another in one process (abort, drain).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	operator := &sim.VirtOperator{Client: mgr.GetClient(), Namespace: cluster.KubeVirtNamespace}
	if err := operator.SetupWithManager(mgr); err != nil {
		return err
	}
	multus := &sim.Multus{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("kubelet"), Nodes: e.NodeNetworks}
	if err := multus.SetupWithManager(mgr); err != nil {
		return err
	}
	what := "virt-operator and Multus simulators, probe agent stand-in reporting the paths not measured"
	switch {
	case e.NodeNetworks == nil && e.reportsByCaller:
		what = "virt-operator and Multus simulators; the probe agents' reports are the caller's"
	case e.NodeNetworks == nil:
		e.ProbeAgents = &sim.ProbeAgents{Client: mgr.GetClient(), Clientset: e.Clientset, Server: e.Config.Host,
			CA: e.CA.CertPEM, Dir: e.Dir, Unmeasured: simulated}
		if err := e.ProbeAgents.SetupWithManager(mgr); err != nil {
			return err
		}
	default:
		agent := &sim.HarvesterAgent{Client: mgr.GetClient(), Nodes: e.NodeNetworks}
		if err := agent.SetupWithManager(mgr); err != nil {
			return err
		}
		e.ProbeAgents = &sim.ProbeAgents{Client: mgr.GetClient(), Clientset: e.Clientset, Binary: binary, Server: e.Config.Host,
			CA: e.CA.CertPEM, Dir: e.Dir, ExtraArgs: probeArgs}
		if err := e.ProbeAgents.SetupWithManager(mgr); err != nil {
			return err
		}
		what = "virt-operator simulator, Multus stand-in with the real CNI plugins (bridge, macvlan, ipvlan, tuning, bandwidth; plugin lists chained) and whereabouts, Harvester agent stand-in, kubelet stand-in running the probe agents"
	}
	if e.harvester {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := addHarvesterSimulator(ctx, e.Cluster, mgr); err != nil {
			return err
		}
		what += ", Harvester's vm-migration-network controller simulator"
	}
	if e.HCO != nil {
		e.HCO.Client = mgr.GetClient()
		if err := e.HCO.SetupWithManager(mgr); err != nil {
			return err
		}
		what += ", HCO's KubeVirt handler simulator"
	}
	if handler {
		standIn := &sim.VirtHandlerStandIn{Client: mgr.GetClient(), Clientset: e.Clientset, Config: e.Config,
			Namespace: cluster.KubeVirtNamespace, MigrationTime: HandlerMigrationTime, Links: multus,
			StreamBandwidth: e.stream[0], DirtyRate: e.stream[1], Proxies: e.MigrationProxies}
		if err := standIn.SetupWithManager(mgr); err != nil {
			return err
		}
		e.Handler = standIn
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: standIn, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		e.HandlerMetricsURL = "http://" + ln.Addr().String() + "/metrics"
		e.closeMetrics = func() { _ = srv.Close() }
		what += ", virt-handler stand-in"
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stopSims, e.simsDone = cancel, make(chan struct{})
	go func() {
		defer close(e.simsDone)
		defer logFile.Close()
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(logFile, "simulators stopped:", err)
		}
	}()
	fmt.Fprintf(e.progress, "env: %s running\n", what)
	return nil
}

// KubeVirt returns the KubeVirt CR.
func (e *Env) KubeVirt(ctx context.Context) (*kubevirtv1.KubeVirt, error) {
	kv := &kubevirtv1.KubeVirt{}
	return kv, e.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: e.kubeVirtName}, kv)
}

// WaitKubeVirtAvailable waits until the KubeVirt CR is Available with reason AllComponentsReady.
func (e *Env) WaitKubeVirtAvailable(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		kv, err := e.KubeVirt(ctx)
		if ready, _ := settings.KubeVirtReady(kv); err == nil && ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("KubeVirt CR not Available/AllComponentsReady after %s: %v", timeout, describeConditions(kv))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func describeConditions(kv *kubevirtv1.KubeVirt) string {
	if kv == nil {
		return "no CR"
	}
	out := ""
	for _, c := range kv.Status.Conditions {
		out += fmt.Sprintf("%s=%s (%s: %s) ", c.Type, c.Status, c.Reason, c.Message)
	}
	return out + "at " + metav1.Now().Format(time.RFC3339)
}
