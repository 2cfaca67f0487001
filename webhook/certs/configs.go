package certs

import (
	"bytes"
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// webhookConfig is one webhook configuration the CA bundle goes into, a validating or a mutating
// one, read from its informer's cache.
type webhookConfig struct {
	kind, name string
	// bundles returns the CA bundle of each of its webhooks as the cache holds them.
	bundles func() ([][]byte, error)
	// update writes bundle into every webhook of a copy of the cached configuration, in one Update.
	update func(ctx context.Context, bundle []byte) error
}

// validatingConfig watches the ValidatingWebhookConfiguration name through f.
func (r *Rotator) validatingConfig(f informers.SharedInformerFactory, name string) (webhookConfig, cache.SharedIndexInformer) {
	cfgs := f.Admissionregistration().V1().ValidatingWebhookConfigurations()
	lister := cfgs.Lister()
	return webhookConfig{kind: "ValidatingWebhookConfiguration", name: name,
		bundles: func() ([][]byte, error) {
			cfg, err := lister.Get(name)
			if err != nil {
				return nil, err
			}
			out := make([][]byte, len(cfg.Webhooks))
			for i, h := range cfg.Webhooks {
				out[i] = h.ClientConfig.CABundle
			}
			return out, nil
		},
		update: func(ctx context.Context, bundle []byte) error {
			cached, err := lister.Get(name)
			if err != nil {
				return err
			}
			cfg := cached.DeepCopy()
			for i := range cfg.Webhooks {
				cfg.Webhooks[i].ClientConfig.CABundle = bundle
			}
			_, err = r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		},
	}, cfgs.Informer()
}

// mutatingConfig watches the MutatingWebhookConfiguration name through f.
func (r *Rotator) mutatingConfig(f informers.SharedInformerFactory, name string) (webhookConfig, cache.SharedIndexInformer) {
	cfgs := f.Admissionregistration().V1().MutatingWebhookConfigurations()
	lister := cfgs.Lister()
	return webhookConfig{kind: "MutatingWebhookConfiguration", name: name,
		bundles: func() ([][]byte, error) {
			cfg, err := lister.Get(name)
			if err != nil {
				return nil, err
			}
			out := make([][]byte, len(cfg.Webhooks))
			for i, h := range cfg.Webhooks {
				out[i] = h.ClientConfig.CABundle
			}
			return out, nil
		},
		update: func(ctx context.Context, bundle []byte) error {
			cached, err := lister.Get(name)
			if err != nil {
				return err
			}
			cfg := cached.DeepCopy()
			for i := range cfg.Webhooks {
				cfg.Webhooks[i].ClientConfig.CABundle = bundle
			}
			_, err = r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
			return err
		},
	}, cfgs.Informer()
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
