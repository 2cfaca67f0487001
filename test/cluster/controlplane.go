package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a local control plane.
type Options struct {
	// Dir holds data, certificates, logs and kubeconfigs; created if missing, wiped first.
	Dir string
	// Binaries to run; built on demand when nil.
	Binaries *Binaries
	// Progress receives one line per startup step; nil discards.
	Progress io.Writer
	// AuditPolicy, when set, is written as the apiserver's audit policy; the log is AuditLog().
	AuditPolicy string
	// KubeVirt runs KubeVirt's own virt-api and virt-controller (StartKubeVirt), with KubeVirt's
	// generated CRDs in place of the controller-gen ones in test/crds.
	KubeVirt bool
	// BootstrapKubeVirt, when set, replaces BootstrapKubeVirt (the KubeVirt CR and what an install
	// leaves before virt-operator's work): it runs once the CRDs are installed, before virt-api
	// and virt-controller start, which read the CR.
	BootstrapKubeVirt func(ctx context.Context, c *Cluster) error
}

// Cluster is a running local control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	Clientset  kubernetes.Interface
	Binaries   *Binaries
	// CA signs the apiserver's serving and client certificates.
	CA       *CA
	procs    []*process
	progress io.Writer
	// kubeVirt is Options.KubeVirt; kubeVirtCA signs virt-api's and virt-controller's
	// certificates; virtAPIPort is where virt-api serves.
	kubeVirt    bool
	bootstrap   func(ctx context.Context, c *Cluster) error
	kubeVirtCA  *CA
	virtAPIPort int
	// apiServer is the running kube-apiserver, apiServerArgs its command line, restarts how
	// often RestartAPIServer ran.
	apiServer     *process
	apiServerArgs []string
	restarts      int
}

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, installs the
// CRDs, and returns once the API server is ready and the CRDs are established; with
// Options.KubeVirt it then starts KubeVirt (StartKubeVirt).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Binaries == nil {
		if opts.Binaries, err = BuildBinaries(ctx); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	c = &Cluster{Dir: opts.Dir, Binaries: opts.Binaries, progress: opts.Progress, kubeVirt: opts.KubeVirt, bootstrap: opts.BootstrapKubeVirt}
	if c.bootstrap == nil {
		c.bootstrap = func(ctx context.Context, c *Cluster) error { return BootstrapKubeVirt(ctx, c.Client) }
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	began := time.Now()
	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, etcdURL, opts.AuditPolicy); err != nil {
		return nil, err
	}
	if err := c.startControllers(); err != nil {
		return nil, err
	}
	if err := c.InstallCRDs(ctx); err != nil {
		return nil, err
	}
	if opts.KubeVirt {
		if err := c.StartKubeVirt(ctx); err != nil {
			return nil, err
		}
	}
	c.logf("control plane ready in %s (%s)", time.Since(began).Round(time.Millisecond), c.Config.Host)
	return c, nil
}

// Stop ends every process the cluster started, newest first.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop()
	}
	c.procs = nil
}

// Pause stops (SIGSTOP) the named processes until the returned resume is called (SIGCONT), so a
// benchmark measures its subject, not the cluster's own background work: kwok's node heartbeats
// and leases, and the controllers and scheduler that follow them. Pausing neither the API server
// nor etcd keeps every informer connected. A name the cluster did not start is an error.
func (c *Cluster) Pause(names ...string) (resume func(), err error) {
	var paused []*process
	resume = func() {
		for _, p := range paused {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
		}
	}
	for _, name := range names {
		i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == name })
		if i < 0 {
			resume()
			return nil, fmt.Errorf("no process %s to pause", name)
		}
		if err := syscall.Kill(-c.procs[i].cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			resume()
			return nil, fmt.Errorf("pausing %s: %w", name, err)
		}
		paused = append(paused, c.procs[i])
	}
	return resume, nil
}

// Check returns an error naming the first control-plane process that exited.
func (c *Cluster) Check() error {
	for _, p := range c.procs {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited (%v); log tail:\n%s", p.name, err, p.tail(2000))
		}
	}
	return nil
}

// AuditLog is the path of the apiserver's audit log (empty unless Options.AuditPolicy was set).
func (c *Cluster) AuditLog() string { return filepath.Join(c.Dir, "audit.log") }

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.progress, "cluster: "+format+"\n", args...)
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	clientPort, peerPort := FreePort(), FreePort()
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := startProcess(c.Dir, "etcd", c.Binaries.Etcd,
		"--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return "", err
	}
	c.procs = append(c.procs, p)
	err = p.waitFor(ctx, 30*time.Second, func() error {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(clientPort), time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	})
	c.logf("etcd up at %s", clientURL)
	return clientURL, err
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL, auditPolicy string) error {
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	ca, err := NewCA("migranet-test-ca")
	if err != nil {
		return err
	}
	c.CA = ca
	proxyCA, err := NewCA("migranet-test-front-proxy-ca")
	if err != nil {
		return err
	}
	caFile, proxyCAFile := filepath.Join(pki, "ca.crt"), filepath.Join(pki, "front-proxy-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(proxyCAFile, proxyCA.CertPEM, 0o600); err != nil {
		return err
	}
	serving, err := ca.Issue("kube-apiserver", nil, "127.0.0.1", "localhost", "10.96.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return err
	}
	servingCrt, servingKey, err := writePair(pki, "apiserver", serving)
	if err != nil {
		return err
	}
	proxyClient, err := proxyCA.Issue("front-proxy-client", nil)
	if err != nil {
		return err
	}
	proxyCrt, proxyKey, err := writePair(pki, "front-proxy-client", proxyClient)
	if err != nil {
		return err
	}
	saKey, saPub, err := writeServiceAccountKey(pki)
	if err != nil {
		return err
	}
	port := FreePort()
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", servingCrt, "--tls-private-key-file", servingKey,
		"--client-ca-file", caFile,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC",
		"--allow-privileged=true",
		"--requestheader-client-ca-file", proxyCAFile,
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", proxyCrt, "--proxy-client-key-file", proxyKey,
		"--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000",
		"--profiling=false",
		"--v", "1",
	}
	if auditPolicy != "" {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return err
		}
		args = append(args, "--audit-policy-file", policy, "--audit-log-path", c.AuditLog(),
			"--audit-log-mode", "blocking", "--audit-log-format", "json")
	}
	p, err := startProcess(c.Dir, "kube-apiserver", c.Binaries.APIServer, args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	c.apiServer, c.apiServerArgs = p, args
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := c.writeKubeconfig(c.Kubeconfig, host, "admin", []string{"system:masters"}); err != nil {
		return err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.Config.QPS, c.Config.Burst = 500, 1000
	if c.Clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	err = p.waitFor(ctx, 90*time.Second, func() error {
		body, err := c.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme()}); err != nil {
		return err
	}
	c.logf("kube-apiserver ready at %s", host)
	return nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling control-plane upgrade does) and
// starts it again with the same flags on the same port, and waits until it is ready. Clients see
// refused connections and broken watches meanwhile; etcd keeps the state.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.apiServer.stop()
	c.restarts++
	p, err := startProcess(c.Dir, fmt.Sprintf("kube-apiserver-restart-%d", c.restarts), c.Binaries.APIServer, c.apiServerArgs...)
	if err != nil {
		return err
	}
	for i, q := range c.procs {
		if q == c.apiServer {
			c.procs[i] = p
		}
	}
	c.apiServer = p
	return p.waitFor(ctx, 90*time.Second, func() error {
		body, err := c.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		return nil
	})
}

// startControllers runs kube-controller-manager (DaemonSet, namespace, garbage collection and
// node-lifecycle controllers), kube-scheduler and kwok, each with its own identity.
func (c *Cluster) startControllers() error {
	pki := filepath.Join(c.Dir, "pki")
	kcm := filepath.Join(c.Dir, "controller-manager.kubeconfig")
	if err := c.writeKubeconfig(kcm, c.Config.Host, "system:kube-controller-manager", nil); err != nil {
		return err
	}
	sched := filepath.Join(c.Dir, "scheduler.kubeconfig")
	if err := c.writeKubeconfig(sched, c.Config.Host, "system:kube-scheduler", nil); err != nil {
		return err
	}
	stages := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o600); err != nil {
		return err
	}
	starts := []struct {
		name, bin string
		args      []string
	}{
		{"kube-controller-manager", c.Binaries.ControllerManager, []string{
			"--kubeconfig", kcm, "--authentication-kubeconfig", kcm, "--authorization-kubeconfig", kcm,
			"--leader-elect=false", "--secure-port=0",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file", filepath.Join(pki, "sa.key"),
			"--root-ca-file", filepath.Join(pki, "ca.crt"),
			"--concurrent-daemonset-syncs", "5",
			"--kube-api-qps", "200", "--kube-api-burst", "400", "--v", "1"}},
		{"kube-scheduler", c.Binaries.Scheduler, []string{
			"--kubeconfig", sched, "--authentication-kubeconfig", sched, "--authorization-kubeconfig", sched,
			"--leader-elect=false", "--secure-port=0", "--v", "1"}},
		{"kwok", c.Binaries.Kwok, []string{
			"--kubeconfig", c.Kubeconfig, "--config", stages,
			"--manage-nodes-with-annotation-selector", KwokNodeAnnotation + "=fake",
			"--cidr", "10.244.0.0/16", "--node-lease-duration-seconds", "40", "--v", "WARN"}},
	}
	for _, s := range starts {
		p, err := startProcess(c.Dir, s.name, s.bin, s.args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}
	c.logf("kube-controller-manager, kube-scheduler and kwok started")
	return nil
}

// WriteKubeconfig writes a kubeconfig for user with groups into the cluster's folder and returns
// its path.
func (c *Cluster) WriteKubeconfig(name, user string, groups ...string) (string, error) {
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, c.writeKubeconfig(path, c.Config.Host, user, groups)
}

// writeKubeconfig writes a kubeconfig authenticating as user (client certificate signed by the
// cluster CA, groups as organisations).
func (c *Cluster) writeKubeconfig(path, host, user string, groups []string) error {
	kp, err := c.CA.Issue(user, groups)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: c.CA.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
