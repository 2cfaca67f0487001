package certs

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webhookcerts "github.com/migranet/migranet/webhook/certs"
)

var _ = Describe("the built-in issuer", func() {
	It("fills an existing empty Secret (as shipped by earlier releases), injects the bundle, serves admission, and restores an overwritten bundle", func(ctx SpecContext) {
		ns, target := namespace(ctx), namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		emptySecret(ctx, ns, secret)
		rc := narrowUser(ctx, "rotator-"+ns, ns, secret, cfgName, true)
		opts := webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName, ExtraSANs: []string{"127.0.0.1"},
			WebhookConfigurations: []string{cfgName}, Rotate: true}
		a, b := startReplica("a", rc, opts), startReplica("b", rc, opts)

		By("saying the webhook configuration is missing, not crashing")
		for _, r := range []*replica{a, b} {
			Eventually(readyCheck).WithArguments(r).Should(MatchError(ContainSubstring("ValidatingWebhookConfiguration " + cfgName + " not found")))
		}
		webhookConfiguration(ctx, cfgName, target, a.URL(), b.URL())
		for _, r := range []*replica{a, b} {
			Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
		}

		By("writing a CA and a serving certificate for the Service's names into the Secret")
		data := secretData(ctx, ns, secret)
		m := webhookcerts.ParseMaterial(data)
		Expect(m.Problems).To(BeEmpty())
		Expect(m.CAs).To(HaveLen(1))
		Expect(m.CAKey).NotTo(BeNil())
		Expect(m.Serving.Leaf.DNSNames).To(ConsistOf(serviceName, serviceName+"."+ns, serviceName+"."+ns+".svc", serviceName+"."+ns+".svc.cluster.local"))
		Expect(m.Serving.Leaf.IPAddresses).To(HaveLen(1))
		Expect(m.Serving.Leaf.IPAddresses[0].String()).To(Equal("127.0.0.1"))

		By("injecting ca.crt into every webhook of the configuration")
		Expect(bundleOf(ctx, cfgName)).To(Equal(data[webhookcerts.KeyCA]))

		By("serving the Secret's certificate on both replicas, trusted by the bundle and by nothing else")
		for _, r := range []*replica{a, b} {
			leaf, err := handshake(r.addr, serviceName+"."+ns+".svc", poolOf(data[webhookcerts.KeyCA]))
			Expect(err).NotTo(HaveOccurred())
			Expect(leaf.Equal(m.Serving.Leaf)).To(BeTrue(), "replica serves serial %x, the Secret holds %x", leaf.SerialNumber, m.Serving.Leaf.SerialNumber)
			_, err = handshake(r.addr, serviceName+"."+ns+".svc", poolOf(f.CA.CertPEM))
			Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
		}

		By("letting the API server call both replicas through the injected bundle")
		Eventually(func() error {
			return f.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "allowed"}})
		}).WithTimeout(10 * time.Second).Should(Succeed())
		err := f.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "deny-me"}})
		Expect(err).To(MatchError(ContainSubstring("refused by the certificate test webhook")))

		By("leaving the Secret alone once it is current (no churn between the replicas)")
		before := &corev1.Secret{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, before)).To(Succeed())
		Consistently(func() string {
			s := &corev1.Secret{}
			Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, s)).To(Succeed())
			return s.ResourceVersion
		}).WithTimeout(2 * time.Second).Should(Equal(before.ResourceVersion))

		By("re-injecting the bundle when someone overwrites it (a kubectl apply of the manifests)")
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Name: cfgName}, cfg)).To(Succeed())
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig.CABundle = f.CA.CertPEM
		}
		Expect(f.Client.Update(ctx, cfg)).To(Succeed())
		overwritten := time.Now()
		Eventually(bundleOf).WithArguments(ctx, cfgName).WithPolling(5 * time.Millisecond).WithTimeout(10 * time.Second).
			Should(Equal(data[webhookcerts.KeyCA]))
		GinkgoWriter.Printf("MEASURE bundle re-injected %s after the overwrite\n", time.Since(overwritten).Round(time.Millisecond))
	})

	// The fault caught: the mutating configuration (the target pod steering) left without the
	// bundle, so the API server cannot call it and, failing open, steers nothing.
	It("injects the bundle into the mutating webhook configuration too", func(ctx SpecContext) {
		ns := namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		rc := narrowUser(ctx, "rotator-"+ns, ns, secret, cfgName, true)
		r := startReplica("mutating", rc, webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName,
			WebhookConfigurations: []string{cfgName}, MutatingWebhookConfigurations: []string{cfgName}, Rotate: true})
		webhookConfiguration(ctx, cfgName, namespace(ctx), r.URL())
		mutatingBundle := mutatingConfiguration(ctx, cfgName, namespace(ctx), r.URL())
		Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
		data := secretData(ctx, ns, secret)
		Expect(bundleOf(ctx, cfgName)).To(Equal(data[webhookcerts.KeyCA]))
		Eventually(mutatingBundle).WithContext(ctx).WithTimeout(10 * time.Second).Should(Equal(data[webhookcerts.KeyCA]))
	})

	// The fault caught: an issuer that waits for a Secret nobody ships (the manifests no longer
	// carry it, so that a re-apply never conflicts with the certificate written into it).
	It("creates its missing Secret, issues into it and injects the bundle", func(ctx SpecContext) {
		ns := namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		rc := narrowUser(ctx, "rotator-"+ns, ns, secret, cfgName, true)
		r := startReplica("creator", rc, webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName,
			WebhookConfigurations: []string{cfgName}, Rotate: true})
		webhookConfiguration(ctx, cfgName, namespace(ctx), r.URL())
		Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
		data := secretData(ctx, ns, secret)
		Expect(data).To(HaveKey(webhookcerts.KeyCert))
		Expect(bundleOf(ctx, cfgName)).To(Equal(data[webhookcerts.KeyCA]))
	})

	It("without the issuer role, says clearly that the Secret is missing, keeps running, and starts once its issuer creates it", func(ctx SpecContext) {
		ns := namespace(ctx)
		secret, cfgName := "webhook-cert", ns
		rc := narrowUser(ctx, "rotator-"+ns, ns, secret, cfgName, true)
		opts := webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName, WebhookConfigurations: []string{cfgName}}
		r := startReplica("lonely", rc, opts)
		Eventually(readyCheck).WithArguments(r).Should(MatchError(ContainSubstring("Secret " + ns + "/" + secret + " not found")))
		_, err := servedLeaf(r.addr)
		Expect(err).To(HaveOccurred(), "a handshake succeeded with no certificate loaded")
		Consistently(readyCheck).WithArguments(r).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")))
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, &corev1.Secret{})).NotTo(Succeed(),
			"a replica that is not the issuer created the Secret")

		issuer := startReplica("issuer", rc, webhookcerts.Options{Namespace: ns, SecretName: secret, ServiceName: serviceName,
			WebhookConfigurations: []string{cfgName}, Rotate: true})
		webhookConfiguration(ctx, cfgName, namespace(ctx), issuer.URL())
		Eventually(readyCheck).WithArguments(r).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
