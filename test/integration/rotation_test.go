package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/settings/v1beta1"
	"github.com/migranet/migranet/test/env"
	"github.com/migranet/migranet/test/framework"
)

// servedCertificate is the leaf certificate the replica's webhook server presents now.
func servedCertificate(addr string) *x509.Certificate {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the certificate, not trusting it
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

var _ = Describe("webhook certificate rotation", func() {
	It("serves a renewed certificate without a restart while admission keeps answering through the API server", func(ctx context.Context) {
		addr := strings.TrimPrefix(f.Manager.WebhookURL(), "https://")
		before := servedCertificate(addr)
		pid := f.Manager.PID()

		By("refusing an invalid setting, dry-run, in a loop: every answer must be the webhook's 422")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var answered int
		var wrong []string
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer GinkgoRecover()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := &v1beta1.Setting{}
				if err := f.Client.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
					continue
				}
				// A merge patch carries no resourceVersion: a status write by the leader in between
				// cannot turn the request into a 409 before admission sees it.
				patch := client.MergeFrom(s.DeepCopy())
				s.Value = `{"clusterNetwork":"migration","vlan":5000,"range":"10.9.0.0/24"}`
				err := f.Client.Patch(ctx, s, patch, client.DryRunAll)
				mu.Lock()
				answered++
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "vlan") {
					wrong = append(wrong, errString(err))
				}
				mu.Unlock()
			}
		}()

		answers := func() int { mu.Lock(); defer mu.Unlock(); return answered }
		Eventually(answers).WithTimeout(framework.Short).Should(BeNumerically(">=", 20), "the loop answers before the rotation")

		By("dropping the serving certificate from the Secret: the built-in issuer signs a new one with the same CA")
		secret := &corev1.Secret{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.CertSecret}, secret)).To(Succeed())
		caBefore := string(secret.Data["ca.crt"])
		secret.Data["tls.crt"], secret.Data["tls.key"] = nil, nil // a kubernetes.io/tls Secret keeps the keys
		rotatedAt := time.Now()
		Expect(f.Client.Update(ctx, secret)).To(Succeed())
		var after *x509.Certificate
		Eventually(func() string {
			after = servedCertificate(addr)
			return after.SerialNumber.String()
		}).WithTimeout(framework.Long).WithPolling(50 * time.Millisecond).ShouldNot(Equal(before.SerialNumber.String()))
		took := time.Since(rotatedAt)
		onNew := answers()
		Eventually(answers).WithTimeout(framework.Short).Should(BeNumerically(">=", onNew+50), "answers on the new certificate")
		close(stop)
		wg.Wait()

		GinkgoWriter.Printf("rotation: new certificate served %s after the Secret update; %d admission answers during the test, %d wrong\n", took, answered, len(wrong))
		AddReportEntry("rotation", fmt.Sprintf("new certificate served %s after the Secret update; %d answers, %d wrong", took, answered, len(wrong)))
		Expect(wrong).To(BeEmpty(), "answers other than the webhook's refusal during the rotation")
		Expect(answered).To(BeNumerically(">", 10))
		Expect(f.Manager.PID()).To(Equal(pid), "the replica was not restarted")
		Expect(after.NotAfter.After(before.NotAfter) || !after.NotBefore.Before(before.NotBefore)).To(BeTrue(), "a newly issued certificate")
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.CertSecret}, secret)).To(Succeed())
		Expect(string(secret.Data["ca.crt"])).To(Equal(caBefore), "the CA and the injected bundle stay")
	})
})

func errString(err error) string {
	if err == nil {
		return "<admitted>"
	}
	return err.Error()
}
