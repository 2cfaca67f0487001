package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/migranet/migranet/netcontroller"
	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
	"github.com/migranet/migranet/webhook"
)

const (
	admNodes    = 1000
	admVMIs     = 5000
	admRequests = 20000
	admWorkers  = 4
)

// benchAdmission measures VMIM create AdmissionReviews per second over HTTPS with keep-alive against
// migranet's real validator, its cache filled from a real API server holding 1,000 nodes, 5,000
// VMIs and 5,000 VMIMs, and compares it with a no-op webhook served by the same server.
func benchAdmission() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "migranet-bench-admission-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster")})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := populate(ctx, c); err != nil {
		return nil, err
	}
	url, caPEM, stop, err := serveWebhooks(ctx, c)
	if err != nil {
		return nil, err
	}
	defer stop()
	body, err := reviewBody()
	if err != nil {
		return nil, err
	}
	hc, err := keepAliveClient(caPEM)
	if err != nil {
		return nil, err
	}
	real, err := drive(ctx, hc, url+"/validate-kubevirt-io-v1-virtualmachineinstancemigration", body)
	if err != nil {
		return nil, err
	}
	noop, err := drive(ctx, hc, url+"/noop", body)
	if err != nil {
		return nil, err
	}
	bare, err := drive(ctx, hc, url+"/bare", body)
	if err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("bench admission: VMIM create, %d nodes + %d VMIs + %d VMIMs cached, %d requests x %d workers over HTTPS keep-alive: "+
		"%.0f reviews/s, p50 %s, p99 %s; no-op VMIM validator served the same way: %.0f reviews/s, p99 %s; ratio %.2f (goal >= 0.9), p99 goal <= 5 ms; "+
		"(bare handler, no decoding: %.0f reviews/s, p99 %s)",
		admNodes, admVMIs, admVMIs, admRequests, admWorkers, real.rps, real.p50, real.p99, noop.rps, noop.p99, real.rps/noop.rps, bare.rps, bare.p99)}, nil
}

// populate creates the nodes, VMIs and VMIMs, and a ready KubeVirt CR.
func populate(ctx context.Context, c *cluster.Cluster) error {
	if err := cluster.BootstrapKubeVirt(ctx, c.Client); err != nil {
		return err
	}
	kv := &kubevirtv1.KubeVirt{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: cluster.KubeVirtNamespace, Name: cluster.KubeVirtName}, kv); err != nil {
		return err
	}
	kv.Status.Conditions = []kubevirtv1.KubeVirtCondition{{Type: kubevirtv1.KubeVirtConditionAvailable, Status: corev1.ConditionTrue, Reason: netcontroller.KubeVirtReadyReason}}
	if err := c.Client.Status().Update(ctx, kv); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	specs := make([]cluster.NodeSpec, admNodes)
	for i := range specs {
		specs[i] = cluster.NodeSpec{Name: fmt.Sprintf("n%04d", i), ClusterNetworks: []string{cluster.DefaultClusterNetwork}}
	}
	jobs := []func(i int) error{
		func(i int) error { return c.Client.Create(ctx, cluster.NodeObject(specs[i])) },
	}
	if err := parallel(admNodes, 16, jobs[0]); err != nil {
		return err
	}
	if err := parallel(admVMIs, 16, func(i int) error {
		if err := c.Client.Create(ctx, framework.VMI("bench", fmt.Sprintf("vm%05d", i), fmt.Sprintf("n%04d", i%admNodes), nil)); err != nil {
			return err
		}
		vmim := framework.VMIM("bench", fmt.Sprintf("old%05d", i), fmt.Sprintf("vm%05d", i), nil)
		if err := c.Client.Create(ctx, vmim); err != nil {
			return err
		}
		vmim.Status.Phase = kubevirtv1.MigrationSucceeded
		return c.Client.Status().Update(ctx, vmim)
	}); err != nil {
		return err
	}
	return cluster.CreateNodes(ctx, c.Client, specs[:1]) // waits until kwok reports nodes Ready
}

func parallel(n, workers int, job func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := job(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// serveWebhooks runs migranet's webhooks, with the manager's own cache options, and a no-op
// webhook on one TLS server on loopback, and waits until the caches are synced.
func serveWebhooks(ctx context.Context, c *cluster.Cluster) (string, []byte, func(), error) {
	certDir := filepath.Join(c.Dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", nil, nil, err
	}
	kp, err := c.CA.Issue("migranet-bench", nil, "127.0.0.1")
	if err != nil {
		return "", nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), kp.CertPEM, 0o600); err != nil {
		return "", nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), kp.KeyPEM, 0o600); err != nil {
		return "", nil, nil, err
	}
	scheme, err := webhook.NewScheme()
	if err != nil {
		return "", nil, nil, err
	}
	port := cluster.FreePort()
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		Cache:         webhook.CacheOptions(cluster.KubeVirtNamespace),
	})
	if err != nil {
		return "", nil, nil, err
	}
	if err := webhook.Setup(ctx, mgr, webhook.Options{KubeVirtNamespace: cluster.KubeVirtNamespace, Snapshots: &netcontroller.Store{}}); err != nil {
		return "", nil, nil, err
	}
	// Baselines: a validator for the same kind that admits everything, served through the same
	// machinery (decoding included); and a bare handler that does not even decode.
	mgr.GetWebhookServer().Register("/noop", admission.WithCustomValidator(scheme, &kubevirtv1.VirtualMachineInstanceMigration{}, noopValidator{}))
	mgr.GetWebhookServer().Register("/bare", &ctrlwebhook.Admission{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = mgr.Start(mctx); close(done) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return "", nil, nil, fmt.Errorf("caches did not sync")
	}
	for _, obj := range []client.ObjectList{&corev1.NodeList{}, &kubevirtv1.VirtualMachineInstanceList{}, &kubevirtv1.VirtualMachineInstanceMigrationList{}} {
		if err := mgr.GetCache().List(ctx, obj); err != nil {
			stop()
			return "", nil, nil, err
		}
	}
	return fmt.Sprintf("https://127.0.0.1:%d", port), c.CA.CertPEM, func() { stop(); <-done }, nil
}

// reviewBody is an AdmissionReview for creating a migration of a VMI on node n0000 that the
// rules admit after checking every node.
func reviewBody() ([]byte, error) {
	vmim := framework.VMIM("bench", "move", "vm00000", nil)
	vmim.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"}
	raw, err := json.Marshal(vmim)
	if err != nil {
		return nil, err
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("bench"), Operation: admissionv1.Create, Namespace: "bench", Name: "move",
			Kind:     metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"},
			Resource: metav1.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"},
			Object:   runtime.RawExtension{Raw: raw},
		},
	}
	return json.Marshal(review)
}

func keepAliveClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("bad CA")
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: admWorkers,
	}, Timeout: 10 * time.Second}, nil
}

// noopValidator admits everything.
type noopValidator struct{}

func (noopValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (noopValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

type driveResult struct {
	rps      float64
	p50, p99 time.Duration
}

// drive sends admRequests reviews from admWorkers keep-alive workers and checks each answer.
func drive(ctx context.Context, hc *http.Client, url string, body []byte) (driveResult, error) {
	lat := make([]time.Duration, admRequests)
	start := time.Now()
	err := parallel(admRequests, admWorkers, func(i int) error {
		t0 := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &review); err != nil || review.Response == nil || !review.Response.Allowed {
			return fmt.Errorf("%s: unexpected answer %s", url, out)
		}
		lat[i] = time.Since(t0)
		return nil
	})
	if err != nil {
		return driveResult{}, err
	}
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return driveResult{
		rps: float64(admRequests) / elapsed.Seconds(),
		p50: lat[len(lat)/2].Round(time.Microsecond), p99: lat[len(lat)*99/100].Round(time.Microsecond),
	}, nil
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
