package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webhookcerts "github.com/migranet/migranet/webhook/certs"
)

// timeline records, with the time each was first seen, the CA bundles of the webhook
// configuration and the leaves the replicas served.
type timeline struct {
	mu       sync.Mutex
	bundles  []seen
	leaves   map[string]seen // by serial
	failures []string
}

type seen struct {
	at     time.Time
	issuer string              // of a leaf
	cas    []*x509.Certificate // of a bundle
}

func (t *timeline) fail(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, fmt.Sprintf(format, args...))
}

// firstLeafOf returns when a leaf issued by ca was first served (zero when never).
func (t *timeline) firstLeafOf(ca *x509.Certificate) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first time.Time
	for _, l := range t.leaves {
		if l.issuer == ca.Subject.String() && (first.IsZero() || l.at.Before(first)) {
			first = l.at
		}
	}
	return first
}

var _ = Describe("rotation", func() {
	It("renews the serving certificate and rolls the CA over while clients and the API server keep handshaking", func(ctx SpecContext) {
		ns, target := namespace(ctx), namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		serverName := serviceName + "." + ns + ".svc"
		emptySecret(ctx, ns, secret)
		rc := narrowUser(ctx, "rotator-"+ns, ns, secret, cfgName, true)
		const settle = time.Second
		opts := webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName, ExtraSANs: []string{"127.0.0.1"},
			WebhookConfigurations: []string{cfgName}, Rotate: true,
			CertValidity: 6 * time.Second, RenewBefore: 3 * time.Second, CAValidity: 24 * time.Second, BundleSettle: settle}
		a, b := startReplica("a", rc, opts), startReplica("b", rc, opts)
		webhookConfiguration(ctx, cfgName, target, a.URL(), b.URL())
		for _, r := range []*replica{a, b} {
			Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
		}
		oldBundle, err := bundleOf(ctx, cfgName)
		Expect(err).NotTo(HaveOccurred())
		ca1 := webhookcerts.ParseMaterial(map[string][]byte{webhookcerts.KeyCA: oldBundle}).CAs
		Expect(ca1).To(HaveLen(1))
		Eventually(func() error {
			return f.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "warm-up"}}, client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(Succeed())

		tl := &timeline{leaves: map[string]seen{}}
		var pool atomic.Pointer[x509.CertPool]
		pool.Store(poolOf(oldBundle))
		loopCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var handshakes, oldOK, oldFailed, admitted atomic.Int64
		var firstOldFailure atomic.Pointer[time.Time]
		loop := func(body func()) {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for loopCtx.Err() == nil {
					body()
				}
			}()
		}

		By("following the configuration's bundle as the API server does")
		loop(func() {
			bundle, err := bundleOf(loopCtx, cfgName)
			if err != nil {
				if loopCtx.Err() == nil {
					tl.fail("reading the bundle: %v", err)
				}
				return
			}
			cas := webhookcerts.ParseMaterial(map[string][]byte{webhookcerts.KeyCA: bundle}).CAs
			tl.mu.Lock()
			if n := len(tl.bundles); n == 0 || string(webhookcerts.EncodeBundle(tl.bundles[n-1].cas)) != string(webhookcerts.EncodeBundle(cas)) {
				tl.bundles = append(tl.bundles, seen{at: time.Now(), cas: cas})
				pool.Store(poolOf(bundle))
			}
			tl.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		})
		By("handshaking with both replicas with the current bundle, and with the bundle from before the rollover")
		for _, r := range []*replica{a, b} {
			loop(func() {
				leaf, err := handshake(r.addr, serverName, pool.Load())
				handshakes.Add(1)
				if err != nil {
					tl.fail("handshake with %s trusting the configuration's bundle: %v", r.addr, err)
					return
				}
				tl.mu.Lock()
				if _, ok := tl.leaves[leaf.SerialNumber.Text(16)]; !ok {
					tl.leaves[leaf.SerialNumber.Text(16)] = seen{at: time.Now(), issuer: leaf.Issuer.String()}
				}
				tl.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			})
			loop(func() {
				if _, err := handshake(r.addr, serverName, poolOf(oldBundle)); err != nil {
					now := time.Now()
					firstOldFailure.CompareAndSwap(nil, &now)
					oldFailed.Add(1)
				} else {
					oldOK.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			})
		}
		By("creating objects the API server admits through both replicas")
		loop(func() {
			err := f.Client.Create(loopCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, GenerateName: "load-"}}, client.DryRunAll)
			if err != nil && loopCtx.Err() == nil {
				tl.fail("admission: %v", err)
				return
			}
			admitted.Add(1)
		})

		By("waiting for the CA rollover: a new CA joins the bundle, then the serving certificate switches to it")
		began := time.Now()
		var ca2 *x509.Certificate
		Eventually(func() error {
			tl.mu.Lock()
			for _, bs := range tl.bundles {
				if len(bs.cas) == 2 && bs.cas[1].Equal(ca1[0]) {
					ca2 = bs.cas[0]
				}
			}
			tl.mu.Unlock()
			if ca2 == nil {
				return fmt.Errorf("no new CA in the bundle yet")
			}
			if at := tl.firstLeafOf(ca2); at.IsZero() || time.Since(at) < 3*time.Second {
				return fmt.Errorf("not 3s past the switch to the new CA yet")
			}
			return nil
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		stop()
		wg.Wait()
		elapsed := time.Since(began)

		// Every loop has ended: the timeline is read without its lock from here on.
		Expect(tl.failures).To(BeEmpty(), "failed handshakes or admission requests during rotation")
		var bundleWithCA2 time.Time
		for _, bs := range tl.bundles {
			if bundleWithCA2.IsZero() && len(bs.cas) > 0 && bs.cas[0].Equal(ca2) {
				bundleWithCA2 = bs.at
			}
		}
		switched := tl.firstLeafOf(ca2)
		Expect(bundleWithCA2.IsZero()).To(BeFalse())
		var byCA1 int
		for _, l := range tl.leaves {
			if l.issuer == ca1[0].Subject.String() {
				byCA1++
			}
		}
		GinkgoWriter.Printf("MEASURE %s of rotation: %d handshakes (0 failed), %d admission requests through both replicas (0 failed), "+
			"%d distinct serving certificates (%d by the first CA), bundle changes %d, switch to the new CA %s after its bundle was seen, "+
			"old-bundle handshakes %d ok / %d failed\n",
			elapsed.Round(time.Millisecond), handshakes.Load(), admitted.Load(), len(tl.leaves), byCA1, len(tl.bundles),
			switched.Sub(bundleWithCA2).Round(time.Millisecond), oldOK.Load(), oldFailed.Load())
		Expect(handshakes.Load()).To(BeNumerically(">", 1000))
		Expect(admitted.Load()).To(BeNumerically(">", 50))
		Expect(byCA1).To(BeNumerically(">=", 3), "serving certificate renewed under the first CA")

		By("switching only once the new bundle had settled, so old-bundle clients kept working meanwhile")
		Expect(switched.Sub(bundleWithCA2)).To(BeNumerically(">=", settle-150*time.Millisecond))
		first := firstOldFailure.Load()
		Expect(first).NotTo(BeNil(), "the old bundle kept working after the switch: the served chain never changed")
		Expect(first.Sub(bundleWithCA2)).To(BeNumerically(">=", settle-150*time.Millisecond),
			"a client with the old bundle failed before the new bundle had settled")

		By("converging: both replicas serve what the Secret holds")
		data := secretData(ctx, ns, secret)
		m := webhookcerts.ParseMaterial(data)
		Expect(m.CAs[0].Equal(ca2)).To(BeTrue())
		for _, r := range []*replica{a, b} {
			Eventually(func() bool {
				c := r.rot.Serving()
				return c != nil && c.Equal(secretLeaf(ctx, ns, secret))
			}).Should(BeTrue(), "replica %s does not serve the Secret's certificate", r.addr)
		}
	})
})

// secretLeaf is the serving certificate the Secret holds now.
func secretLeaf(ctx context.Context, ns, name string) *x509.Certificate {
	m := webhookcerts.ParseMaterial(secretData(ctx, ns, name))
	if m.Serving == nil {
		return nil
	}
	return m.Serving.Leaf
}
