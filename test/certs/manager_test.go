package certs

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	"github.com/migranet/migranet/test/env"
	webhookcerts "github.com/migranet/migranet/webhook/certs"
)

var _ = Describe("migranet manager with --cert-secret --cert-rotation", func() {
	It("creates its Secret, is ready once the bundle is injected, and serves a renewed certificate without a restart", func(ctx SpecContext) {
		ns, target := namespace(ctx), namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		dir := filepath.Join(f.Dir, "manager-"+ns)
		binary, err := env.BuildMigranet(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		webhookPort, probePort := cluster.FreePort(), cluster.FreePort()
		webhookAddr := "127.0.0.1:" + strconv.Itoa(webhookPort)
		webhookConfiguration(ctx, cfgName, target, "https://"+webhookAddr+"/unused")

		logPath := filepath.Join(dir, "manager.log")
		logf, err := os.Create(logPath)
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(binary, "manager", "--kubeconfig", f.Kubeconfig, "--namespace", ns, "--leader-elect=false",
			"--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(webhookPort), "--metrics-bind-address", "0",
			"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probePort),
			"--cert-secret", secret, "--cert-rotation", "--webhook-configuration", cfgName, "--cert-extra-sans", "127.0.0.1")
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); _ = logf.Close() }()
		DeferCleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			Eventually(exited).WithTimeout(20 * time.Second).Should(Receive())
		})
		readyz := func(check string) (int, error) {
			url := "http://127.0.0.1:" + strconv.Itoa(probePort) + "/readyz"
			if check != "" {
				url += "/" + check
			}
			resp, err := http.Get(url) //nolint:gosec,noctx // a loopback probe
			if err != nil {
				return 0, err
			}
			defer func() { _ = resp.Body.Close() }()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}
		logText := func() string { b, _ := os.ReadFile(logPath); return string(b) }

		// The fault caught: a built-in issuer that waits for a Secret nobody ships any more.
		By("creating the missing Secret itself and becoming ready")
		Eventually(logText).WithTimeout(60 * time.Second).Should(ContainSubstring("webhook certificate Secret created"))
		Eventually(readyz).WithArguments("").WithTimeout(30*time.Second).Should(Equal(http.StatusOK), "see %s", logPath)
		Consistently(exited).WithTimeout(time.Second).ShouldNot(Receive())
		data := secretData(ctx, ns, secret)
		Expect(bundleOf(ctx, cfgName)).To(Equal(data[webhookcerts.KeyCA]))
		first := webhookcerts.ParseMaterial(data).Serving.Leaf
		leaf, err := handshake(webhookAddr, serviceName+"."+ns+".svc", poolOf(data[webhookcerts.KeyCA]))
		Expect(err).NotTo(HaveOccurred())
		Expect(leaf.Equal(first)).To(BeTrue(), "the webhook server does not serve the Secret's certificate")

		By("serving a renewed certificate without a restart when the serving pair is removed from the Secret")
		s := &corev1.Secret{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, s)).To(Succeed())
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = []byte{}, []byte{}
		Expect(f.Client.Update(ctx, s)).To(Succeed())
		Eventually(func() bool {
			leaf, err := handshake(webhookAddr, serviceName+"."+ns+".svc", poolOf(data[webhookcerts.KeyCA]))
			return err == nil && !leaf.Equal(first)
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		Expect(exited).NotTo(Receive(), "the manager exited")
	})
})
