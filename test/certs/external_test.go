package certs

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/cluster"
	webhookcerts "github.com/migranet/migranet/webhook/certs"
)

var _ = Describe("an external issuer (cert-manager)", func() {
	It("serves each certificate written into the Secret within the watch latency, with no failed handshake and read-only access", func(ctx SpecContext) {
		ns := namespace(ctx)
		secret := "webhook-cert"
		serverName := serviceName + "." + ns + ".svc"
		ca, err := cluster.NewCA("external-issuer-ca")
		Expect(err).NotTo(HaveOccurred())
		issue := func() map[string][]byte {
			kp, err := ca.Issue(serverName, nil, serverName, "127.0.0.1")
			Expect(err).NotTo(HaveOccurred())
			return map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM, "ca.crt": ca.CertPEM}
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}, Type: corev1.SecretTypeTLS, Data: issue()}
		Expect(f.Client.Create(ctx, s)).To(Succeed())
		rc := narrowUser(ctx, "reader-"+ns, ns, secret, "", false)
		opts := webhookcerts.Options{Namespace: ns, SecretName: secret}
		a, b := startReplica("a", rc, opts), startReplica("b", rc, opts)
		for _, r := range []*replica{a, b} {
			Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
		}

		pool := poolOf(ca.CertPEM)
		loopCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var ok, failed atomic.Int64
		var failures sync.Map
		for _, r := range []*replica{a, b} {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for loopCtx.Err() == nil {
					if _, err := handshake(r.addr, serverName, pool); err != nil {
						failed.Add(1)
						failures.Store(err.Error(), true)
					} else {
						ok.Add(1)
					}
				}
			}()
		}

		const rotations = 20
		var latencies []time.Duration
		for range rotations {
			data := issue()
			want := webhookcerts.ParseMaterial(data).Serving.Leaf
			Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			s.Data = data
			written := time.Now()
			Expect(f.Client.Update(ctx, s)).To(Succeed())
			for _, r := range []*replica{a, b} {
				Eventually(servedLeaf).WithArguments(r.addr).WithPolling(time.Millisecond).WithTimeout(5*time.Second).
					Should(WithTransform(want.Equal, BeTrue()), "replica %s never served the new certificate", r.addr)
				latencies = append(latencies, time.Since(written))
			}
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		wg.Wait()
		slices.Sort(latencies)
		GinkgoWriter.Printf("MEASURE external rotation: %d rotations, Secret update to new certificate served on a replica: "+
			"median %s, max %s; %d handshakes, %d failed\n", rotations, latencies[len(latencies)/2].Round(100*time.Microsecond),
			latencies[len(latencies)-1].Round(100*time.Microsecond), ok.Load()+failed.Load(), failed.Load())
		var errs []string
		failures.Range(func(k, _ any) bool { errs = append(errs, k.(string)); return true })
		Expect(errs).To(BeEmpty())
		Expect(failed.Load()).To(BeZero())
		Expect(ok.Load()).To(BeNumerically(">", 100))
		Expect(latencies[len(latencies)-1]).To(BeNumerically("<", 2*time.Second))

		By("never writing the Secret: it holds what the external issuer wrote last")
		written := s.ResourceVersion
		Consistently(func() string {
			Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			return s.ResourceVersion
		}).WithTimeout(time.Second).Should(Equal(written))
		Expect(webhookcerts.ParseMaterial(s.Data).Serving.Leaf.Equal(a.rot.Serving())).To(BeTrue())
	})
})
