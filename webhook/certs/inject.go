package certs

import (
	"bytes"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// inject writes bundle into every webhook of every named configuration that does not carry it,
// and returns what could not be injected (a configuration that does not exist).
func (r *Rotator) inject(ctx context.Context, bundle []byte) ([]string, error) {
	var missing []string
	confirmed := false
	for _, c := range r.configs {
		bundles, err := c.bundles()
		if apierrors.IsNotFound(err) {
			if !c.optional {
				missing = append(missing, fmt.Sprintf("%s %s not found", c.kind, c.name))
			}
			continue
		} else if err != nil {
			return nil, err
		}
		if carries(bundles, bundle) {
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
		err = c.update(ctx, bundle)
		if apierrors.IsConflict(err) {
			return nil, fmt.Errorf("%w: %s %s changed since it was read", errRetry, c.kind, c.name)
		} else if err != nil {
			return nil, fmt.Errorf("injecting the CA bundle into %s %s: %w", c.kind, c.name, err)
		}
		ctrl.LoggerFrom(ctx).Info("CA bundle injected", "kind", c.kind, "name", c.name, "webhooks", len(bundles))
	}
	return missing, nil
}
