package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webhookcerts "github.com/migranet/migranet/webhook/certs"
)

// serviceName is the webhook Service the serving certificates name.
const serviceName = "migranet-webhook"

// replica is a Rotator with a TLS server on loopback that answers admission reviews the way
// migranet's webhook server would: from the Rotator's in-memory certificate.
type replica struct {
	rot  *webhookcerts.Rotator
	addr string
}

// URL is where the API server reaches the replica's admission handler.
func (r *replica) URL() string { return "https://" + r.addr + "/validate" }

// startReplica runs a Rotator and its TLS server until the spec ends.
func startReplica(name string, cfg *rest.Config, opts webhookcerts.Options) *replica {
	GinkgoHelper()
	rot, err := webhookcerts.New(cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	ctx = ctrl.LoggerInto(ctx, GinkgoLogr.WithName(name))
	done := make(chan error, 1)
	go func() { done <- rot.Start(ctx) }()

	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	rot.ConfigureTLS(tlsCfg)
	l, err := tls.Listen("tcp", "127.0.0.1:0", tlsCfg)
	Expect(err).NotTo(HaveOccurred())
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", admit)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(GinkgoWriter, name+" server: ", 0)}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(func() {
		_ = srv.Close()
		cancel()
		Eventually(done).WithTimeout(10*time.Second).Should(Receive(BeNil()), "Rotator.Start of %s returned an error", name)
	})
	return &replica{rot: rot, addr: l.Addr().String()}
}

// admit allows everything but objects named deny-me.
func admit(w http.ResponseWriter, req *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(req.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not an admission review", http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: review.Request.Name != "deny-me"}
	if !resp.Allowed {
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "refused by the certificate test webhook"}
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// namespace creates a namespace for the spec and deletes it afterwards.
func namespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	Expect(f.Client.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// emptySecret creates the Secret as migranet's manifests shipped it for the built-in issuer before
// the issuer created it itself (an install upgraded from then still has it).
func emptySecret(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(f.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: {}, corev1.TLSPrivateKeyKey: {}},
	})).To(Succeed())
}

// configMapWebhook is webhook i of webhookConfiguration: ConfigMap creation in target, sent to
// url, failurePolicy Fail, no CA bundle.
func configMapWebhook(i int, target, url string) admissionregistrationv1.ValidatingWebhook {
	none, fail, timeout := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail, int32(5)
	return admissionregistrationv1.ValidatingWebhook{
		Name:         fmt.Sprintf("r%d.certs.migranet.io", i),
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: target}},
		SideEffects:             &none,
		FailurePolicy:           &fail,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
	}
}

// webhookConfiguration registers one webhook per URL for ConfigMap creation in target, with no
// CA bundle, and deletes it afterwards.
func webhookConfiguration(ctx context.Context, name, target string, urls ...string) {
	GinkgoHelper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, url := range urls {
		cfg.Webhooks = append(cfg.Webhooks, configMapWebhook(i, target, url))
	}
	Expect(f.Client.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, cfg))).To(Succeed()) })
}

// mutatingConfiguration registers, as a mutating webhook, the first webhook webhookConfiguration
// would register at url (failurePolicy Ignore), with no CA bundle, and deletes it afterwards; it
// returns a reader of the bundle it carries.
func mutatingConfiguration(ctx context.Context, name, target, url string) func(context.Context) ([]byte, error) {
	GinkgoHelper()
	v := configMapWebhook(0, target, url)
	ignore := admissionregistrationv1.Ignore
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules,
			NamespaceSelector: v.NamespaceSelector, SideEffects: v.SideEffects, FailurePolicy: &ignore,
			TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions}}}
	Expect(f.Client.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, cfg))).To(Succeed()) })
	return func(ctx context.Context) ([]byte, error) {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := f.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return nil, err
		}
		return got.Webhooks[0].ClientConfig.CABundle, nil
	}
}

// narrowUser returns a client configuration for a user allowed what migranet's manifests allow:
// get, list and watch (and, for the issuer, update) on the one Secret, and, for the issuer, get,
// list, watch, update and patch on the one webhook configuration of each kind.
func narrowUser(ctx context.Context, user, ns, secret, webhookCfg string, issuer bool) *rest.Config {
	GinkgoHelper()
	verbs := []string{"get", "list", "watch"}
	if issuer {
		verbs = append(verbs, "update")
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: verbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
	}
	if issuer {
		objs = append(objs,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{admissionregistrationv1.GroupName}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
					ResourceNames: []string{webhookCfg}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}})
	}
	if issuer { // as manifests/rbac/role.yaml: creating cannot be limited to a name
		role := objs[0].(*rbacv1.Role)
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}})
	}
	for _, o := range objs {
		Expect(f.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, o))).To(Succeed()) })
	}
	path, err := f.WriteKubeconfig(user, user)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// handshake opens a TLS connection to addr trusting only pool and returns the served leaf.
func handshake(addr, serverName string, pool *x509.CertPool) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// servedLeaf returns what addr serves, without verifying it.
func servedLeaf(addr string) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads what is served
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// poolOf returns a pool of the PEM certificates in bundle.
func poolOf(bundle []byte) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	return pool
}

// bundles returns the CA bundle of every webhook of a configuration; an error when they differ.
func bundleOf(ctx context.Context, name string) ([]byte, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.Client.Get(ctx, client.ObjectKey{Name: name}, cfg); err != nil {
		return nil, err
	}
	if len(cfg.Webhooks) == 0 {
		return nil, errors.New("no webhooks")
	}
	first := cfg.Webhooks[0].ClientConfig.CABundle
	for _, w := range cfg.Webhooks[1:] {
		if string(w.ClientConfig.CABundle) != string(first) {
			return nil, fmt.Errorf("webhook %s carries another bundle than %s", w.Name, cfg.Webhooks[0].Name)
		}
	}
	return first, nil
}

// secretData reads the certificate Secret.
func secretData(ctx context.Context, ns, name string) map[string][]byte {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
	return s.Data
}

// readyCheck calls a Rotator's readiness check.
func readyCheck(r *replica) error { return r.rot.ReadyCheck(nil) }
