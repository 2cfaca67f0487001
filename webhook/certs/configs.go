package certs

import (
	"bytes"
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// webhookConfig is one webhook configuration the CA bundle goes into, a validating or a mutating
// one, read from its informer's cache.
type webhookConfig struct {
	kind, name string
	// optional: its absence is no problem (nothing to inject).
	optional bool
	// bundles returns the CA bundle of each of its webhooks as the cache holds them.
	bundles func() ([][]byte, error)
	// update writes bundle into every webhook of a copy of the cached configuration, in one Update.
	update func(ctx context.Context, bundle []byte) error
}

// configOf is the webhookConfig of the configuration name of one kind: get reads it from the
// cache, clients points at each of its webhooks' client configurations, put updates it.
func configOf[T runtime.Object](kind, name string, get func(string) (T, error),
	clients func(T) []*admissionregistrationv1.WebhookClientConfig, put func(context.Context, T) error) webhookConfig {
	return webhookConfig{kind: kind, name: name,
		bundles: func() ([][]byte, error) {
			cfg, err := get(name)
			if err != nil {
				return nil, err
			}
			var out [][]byte
			for _, cc := range clients(cfg) {
				out = append(out, cc.CABundle)
			}
			return out, nil
		},
		update: func(ctx context.Context, bundle []byte) error {
			cached, err := get(name)
			if err != nil {
				return err
			}
			cfg := cached.DeepCopyObject().(T)
			for _, cc := range clients(cfg) {
				cc.CABundle = bundle
			}
			return put(ctx, cfg)
		},
	}
}

// validatingConfig watches the ValidatingWebhookConfiguration name through f.
func (r *Rotator) validatingConfig(f informers.SharedInformerFactory, name string) (webhookConfig, cache.SharedIndexInformer) {
	cfgs := f.Admissionregistration().V1().ValidatingWebhookConfigurations()
	return configOf("ValidatingWebhookConfiguration", name, cfgs.Lister().Get,
		func(c *admissionregistrationv1.ValidatingWebhookConfiguration) (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range c.Webhooks {
				out = append(out, &c.Webhooks[i].ClientConfig)
			}
			return out
		},
		func(ctx context.Context, c *admissionregistrationv1.ValidatingWebhookConfiguration) error {
			_, err := r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		}), cfgs.Informer()
}

// mutatingConfig watches the MutatingWebhookConfiguration name through f.
func (r *Rotator) mutatingConfig(f informers.SharedInformerFactory, name string) (webhookConfig, cache.SharedIndexInformer) {
	cfgs := f.Admissionregistration().V1().MutatingWebhookConfigurations()
	return configOf("MutatingWebhookConfiguration", name, cfgs.Lister().Get,
		func(c *admissionregistrationv1.MutatingWebhookConfiguration) (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range c.Webhooks {
				out = append(out, &c.Webhooks[i].ClientConfig)
			}
			return out
		},
		func(ctx context.Context, c *admissionregistrationv1.MutatingWebhookConfiguration) error {
			_, err := r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		}), cfgs.Informer()
}

// carries reports whether every webhook trusts exactly bundle.
func carries(bundles [][]byte, bundle []byte) bool {
	for _, b := range bundles {
		if !bytes.Equal(b, bundle) {
			return false
		}
	}
	return true
}
