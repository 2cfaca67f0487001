package certs

import (
	"bytes"
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// inject writes bundle into every webhook of every named configuration that does not carry it,
// and returns what could not be injected (a configuration that does not exist).
func (r *Rotator) inject(ctx context.Context, bundle []byte) ([]string, error) {
	var missing []string
	confirmed := false
	for _, name := range r.opts.WebhookConfigurations {
		cached, err := r.configs[name].Get(name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, fmt.Sprintf("ValidatingWebhookConfiguration %s not found", name))
			continue
		} else if err != nil {
			return nil, err
		}
		if carries(cached.Webhooks, bundle) {
			continue
		}
		// A replica whose Secret cache lags must not put an older bundle back: confirm the
		// bundle with a live read before overwriting anything.
		if !confirmed {
			live, err := r.client.CoreV1().Secrets(r.opts.Namespace).Get(ctx, r.opts.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
			}
			if !bytes.Equal(live.Data[KeyCA], bundle) {
				return nil, fmt.Errorf("%w: the cached Secret lags the API server", errRetry)
			}
			confirmed = true
		}
		cfg := cached.DeepCopy()
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig.CABundle = bundle
		}
		_, err = r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) {
			return nil, fmt.Errorf("%w: ValidatingWebhookConfiguration %s changed since it was read", errRetry, name)
		} else if err != nil {
			return nil, fmt.Errorf("injecting the CA bundle into ValidatingWebhookConfiguration %s: %w", name, err)
		}
		ctrl.LoggerFrom(ctx).Info("CA bundle injected", "validatingWebhookConfiguration", name, "webhooks", len(cfg.Webhooks))
	}
	return missing, nil
}

// carries reports whether every webhook trusts exactly bundle.
func carries(hooks []admissionregistrationv1.ValidatingWebhook, bundle []byte) bool {
	for _, h := range hooks {
		if !bytes.Equal(h.ClientConfig.CABundle, bundle) {
			return false
		}
	}
	return true
}
