package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/manifests"
)

// devWebhookConfiguration is the name of the webhook configuration `migranet dev` registers.
const devWebhookConfiguration = "migranet-dev"

// devSetup is what `migranet dev` does besides running the manager: it serves the webhooks on
// loopback with a self-signed certificate and registers them by URL once the server is up.
type devSetup struct {
	client            client.Client
	caBundle          []byte
	baseURL           string
	kubevirtNamespace string
}

// prepareDev installs the CRDs, creates the webhook certificate and fixes the dev flags.
func prepareDev(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, f *managerFlags) (*devSetup, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		return nil, err
	}
	if err := applyCRDs(ctx, c); err != nil {
		return nil, err
	}
	if err := applyGuard(ctx, c, f.namespace, f.kubevirtNamespace); err != nil {
		return nil, err
	}
	if f.webhookPort == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(f.webhookHost, "0"))
		if err != nil {
			return nil, err
		}
		f.webhookPort = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	if f.certDir == "" {
		if f.certDir, err = os.MkdirTemp("", "migranet-dev-certs-"); err != nil {
			return nil, err
		}
	}
	ca, err := devCertificate(f.certDir, f.webhookHost)
	if err != nil {
		return nil, err
	}
	return &devSetup{client: c, caBundle: ca, baseURL: fmt.Sprintf("https://%s", net.JoinHostPort(f.webhookHost, fmt.Sprint(f.webhookPort))),
		kubevirtNamespace: f.kubevirtNamespace}, nil
}

// devCertificate writes tls.crt/tls.key for host into dir unless present, and returns the CA bundle.
func devCertificate(dir, host string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if existing, err := os.ReadFile(crt); err == nil {
		return existing, nil
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(host); ip != nil {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", ips, nil)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return nil, err
	}
	// certPEM holds the serving certificate followed by the CA that signed it: a valid bundle.
	return certPEM, os.WriteFile(crt, certPEM, 0o600)
}

// Start registers the webhook configuration once the local webhook server answers.
func (d *devSetup) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("dev")
	host := d.baseURL[len("https://"):]
	for {
		conn, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	cfg, err := d.webhookConfiguration()
	if err != nil {
		return err
	}
	if err := createOrUpdate(ctx, d.client, cfg, &admissionregistrationv1.ValidatingWebhookConfiguration{}); err != nil {
		return fmt.Errorf("registering webhook configuration %s: %w", devWebhookConfiguration, err)
	}
	mcfg, err := d.steeringConfiguration()
	if err != nil {
		return err
	}
	if err := createOrUpdate(ctx, d.client, mcfg, &admissionregistrationv1.MutatingWebhookConfiguration{}); err != nil {
		return fmt.Errorf("registering mutating webhook configuration %s: %w", devWebhookConfiguration, err)
	}
	log.Info("webhooks registered", "url", d.baseURL, "configuration", devWebhookConfiguration)
	<-ctx.Done()
	return nil
}

// createOrUpdate creates obj, or updates it over the existing object (read into existing).
func createOrUpdate(ctx context.Context, c client.Client, obj, existing client.Object) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, obj)
	case err != nil:
		return err
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, obj)
}

// steeringConfiguration is the generated MutatingWebhookConfiguration (the target pod steering),
// scoped as manifests/webhook/steering-scope.yaml says and pointing at the local server by URL.
func (d *devSetup) steeringConfiguration() (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	data, err := fs.ReadFile(manifests.FS, "webhook/manifests.yaml")
	if err != nil {
		return nil, err
	}
	scopeData, err := fs.ReadFile(manifests.FS, "webhook/steering-scope.yaml")
	if err != nil {
		return nil, err
	}
	scope := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := utilyaml.Unmarshal(scopeData, scope); err != nil {
		return nil, fmt.Errorf("manifests/webhook/steering-scope.yaml: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := dec.Decode(cfg); errors.Is(err, io.EOF) {
			return nil, errors.New("manifests/webhook/manifests.yaml holds no MutatingWebhookConfiguration")
		} else if err != nil {
			return nil, err
		}
		if cfg.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		cfg.Name = devWebhookConfiguration
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			for _, sc := range scope.Webhooks {
				if sc.Name == w.Name {
					w.NamespaceSelector, w.ObjectSelector = sc.NamespaceSelector.DeepCopy(), sc.ObjectSelector.DeepCopy()
				}
			}
			if w.ObjectSelector == nil {
				return nil, fmt.Errorf("manifests/webhook/steering-scope.yaml gives webhook %s no objectSelector: it would see every pod", w.Name)
			}
			path := ""
			if cc := w.ClientConfig; cc.Service != nil && cc.Service.Path != nil {
				path = *cc.Service.Path
			}
			url := d.baseURL + path
			w.ClientConfig.Service, w.ClientConfig.URL, w.ClientConfig.CABundle = nil, &url, d.caBundle
		}
		return cfg, nil
	}
}

// webhookConfiguration turns the generated configuration (service references) into one that
// points at the local server by URL.
func (d *devSetup) webhookConfiguration() (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := fs.ReadFile(manifests.FS, "webhook/manifests.yaml")
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := dec.Decode(cfg); errors.Is(err, io.EOF) {
			return nil, errors.New("manifests/webhook/manifests.yaml holds no ValidatingWebhookConfiguration")
		} else if err != nil {
			return nil, err
		}
		if cfg.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		cfg.Name = devWebhookConfiguration
		if err := applyScopes(cfg, d.kubevirtNamespace); err != nil {
			return nil, err
		}
		for i := range cfg.Webhooks {
			cc := &cfg.Webhooks[i].ClientConfig
			path := ""
			if cc.Service != nil && cc.Service.Path != nil {
				path = *cc.Service.Path
			}
			url := d.baseURL + path
			cc.Service, cc.URL, cc.CABundle = nil, &url, d.caBundle
		}
		return cfg, nil
	}
}

// applyScopes gives cfg's webhooks the selectors of manifests/webhook/scopes.yaml (the patch the
// kustomize base applies), with the KubeVirt namespace this manager was given.
func applyScopes(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, kubevirtNamespace string) error {
	data, err := fs.ReadFile(manifests.FS, "webhook/scopes.yaml")
	if err != nil {
		return err
	}
	scopes := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := utilyaml.Unmarshal(data, scopes); err != nil {
		return fmt.Errorf("manifests/webhook/scopes.yaml: %w", err)
	}
	for _, sc := range scopes.Webhooks {
		found := false
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			if w.Name != sc.Name {
				continue
			}
			found = true
			w.NamespaceSelector, w.ObjectSelector = sc.NamespaceSelector.DeepCopy(), sc.ObjectSelector.DeepCopy()
			if ns := w.NamespaceSelector; ns != nil && ns.MatchLabels[namespaceNameLabel] != "" {
				ns.MatchLabels[namespaceNameLabel] = kubevirtNamespace
			}
		}
		if !found {
			return fmt.Errorf("manifests/webhook/scopes.yaml scopes webhook %s, which the generated configuration lacks", sc.Name)
		}
	}
	return nil
}

// namespaceNameLabel is the label the API server puts on every namespace, with its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// applyCRDs creates or updates the embedded CRDs and waits until they are established.
func applyCRDs(ctx context.Context, c client.Client) error {
	files, err := fs.Glob(manifests.FS, "crd/migranet.io_*.yaml")
	if err != nil {
		return err
	}
	for _, file := range files {
		data, err := fs.ReadFile(manifests.FS, file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		existing := &apiextensionsv1.CustomResourceDefinition{}
		err = c.Get(ctx, client.ObjectKeyFromObject(crd), existing)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, crd)
		case err == nil:
			crd.ResourceVersion = existing.ResourceVersion
			err = c.Update(ctx, crd)
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err == nil {
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("CRD %s not established after 30s", name)
}
