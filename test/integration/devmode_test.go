package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/framework"
)

// `migranet dev` runs the manager out of cluster against any cluster an admin's kubeconfig
// reaches: it registers its own webhook configuration by URL with a self-signed certificate.
var _ = Describe("migranet dev", func() {
	It("registers a webhook configuration for its own loopback server, which serves the certificate of that bundle, and stops on SIGTERM", func(ctx context.Context) {
		dir := GinkgoT().TempDir()
		port := cluster.FreePort()
		cmd := exec.Command(f.Manager.Binary, "dev", "--kubeconfig", f.Kubeconfig, "--webhook-port", strconv.Itoa(port),
			"--cert-dir", filepath.Join(dir, "certs"))
		logf, err := os.Create(filepath.Join(dir, "dev.log"))
		Expect(err).NotTo(HaveOccurred())
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		Expect(cmd.Start()).To(Succeed())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		DeferCleanup(func(ctx context.Context) {
			_ = cmd.Process.Kill() // no-op when the spec already stopped it
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			cfg.Name = "migranet-dev"
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, cfg))).To(Succeed())
			mcfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			mcfg.Name = "migranet-dev"
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, mcfg))).To(Succeed())
		})

		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Eventually(func(g Gomega) {
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: "migranet-dev"}, cfg)).To(Succeed())
			g.Expect(cfg.Webhooks).To(HaveLen(5))
			g.Expect(cfg.Webhooks[0].ClientConfig.URL).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		By("the steering webhook is registered by URL too, scoped to migration target pods")
		mcfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Eventually(func(g Gomega) {
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: "migranet-dev"}, mcfg)).To(Succeed())
			g.Expect(mcfg.Webhooks).To(HaveLen(1))
			g.Expect(mcfg.Webhooks[0].ObjectSelector).NotTo(BeNil())
			g.Expect(mcfg.Webhooks[0].ObjectSelector.MatchExpressions).To(HaveLen(2))
			g.Expect(*mcfg.Webhooks[0].ClientConfig.URL).To(HaveSuffix("/mutate-v1-pod-migration-target"))
		}).WithContext(ctx).WithTimeout(framework.Long).Should(Succeed())
		pool := x509.NewCertPool()
		for _, w := range cfg.Webhooks {
			u, err := url.Parse(*w.ClientConfig.URL)
			Expect(err).NotTo(HaveOccurred())
			Expect(u.Host).To(Equal("127.0.0.1:" + strconv.Itoa(port)))
			Expect(pool.AppendCertsFromPEM(w.ClientConfig.CABundle)).To(BeTrue(), w.Name)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		Expect(err).NotTo(HaveOccurred(), "the bundle in the configuration verifies the served certificate")
		conn.Close()

		Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(done).WithTimeout(30*time.Second).Should(Receive(BeNil()), func() string {
			b, _ := os.ReadFile(filepath.Join(dir, "dev.log"))
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			return "the end of migranet dev's log:\n" + string(b)
		})
	})
})
