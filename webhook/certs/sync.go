package certs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// sync loads the serving certificate from the Secret and, as the issuer, renews what Plan says
// and injects the bundle. It returns when to look again.
func (r *Rotator) sync(ctx context.Context) (time.Duration, error) {
	now := r.opts.Now()
	secret, err := r.secrets.Secrets(r.opts.Namespace).Get(r.opts.SecretName)
	if apierrors.IsNotFound(err) && r.opts.Rotate {
		// The issuer creates its Secret: shipping it in the manifests would make every re-apply
		// conflict with the certificate migranet wrote into it.
		return 0, r.create(ctx)
	} else if apierrors.IsNotFound(err) {
		r.setProblem(ctx, fmt.Sprintf("Secret %s/%s not found: its issuer (cert-manager's Certificate in that overlay) creates it",
			r.opts.Namespace, r.opts.SecretName))
		return maxRecheck, nil
	} else if err != nil {
		return 0, err
	}
	loadErr := r.load(ctx, now, secret.Data)
	if !r.opts.Rotate {
		switch {
		case loadErr != nil && r.serving.Load() == nil:
			r.setProblem(ctx, fmt.Sprintf("Secret %s/%s holds no usable serving certificate (%v); its issuer (cert-manager) writes tls.crt and tls.key",
				r.opts.Namespace, r.opts.SecretName, loadErr))
		case loadErr != nil:
			ctrl.LoggerFrom(ctx).Info("the Secret holds no usable serving certificate; still serving the last one loaded", "problem", loadErr.Error())
			r.setProblem(ctx, "")
		default:
			r.setProblem(ctx, "")
		}
		return maxRecheck, nil
	}

	d, err := Plan(now, ParseMaterial(secret.Data), r.publishedFor(now, secret.Data[KeyCA]), r.opts)
	if err != nil {
		return 0, err
	}
	if d.Next != nil {
		if secret, err = r.write(ctx, secret, d); err != nil {
			return 0, err
		}
		if err := r.load(ctx, now, secret.Data); err != nil {
			return 0, err
		}
	}
	missing, err := r.inject(ctx, secret.Data[KeyCA])
	if err != nil {
		return 0, err
	}
	if len(missing) > 0 {
		r.setProblem(ctx, "CA bundle not injected: "+strings.Join(missing, "; "))
	} else {
		r.setProblem(ctx, "")
	}
	if d.Next == nil && d.Reason != "" {
		ctrl.LoggerFrom(ctx).V(1).Info("waiting", "reason", d.Reason)
	}
	// Writes here come back as watch events and are planned on again then.
	return d.Recheck.Sub(now), nil
}

// create creates the empty Secret the built-in issuer then fills; the watch event that follows
// plans the certificate. Another replica creating it first is no error.
func (r *Rotator) create(ctx context.Context) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: r.opts.SecretName,
			Labels: map[string]string{"app.kubernetes.io/name": "migranet"}},
		Type: corev1.SecretTypeOpaque,
	}
	_, err := r.client.CoreV1().Secrets(r.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%w: Secret created by another replica", errRetry)
	} else if err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
	}
	ctrl.LoggerFrom(ctx).Info("webhook certificate Secret created", "secret", r.opts.Namespace+"/"+r.opts.SecretName)
	return nil
}

// write stores the planned material in the Secret, guarded by its resourceVersion; a conflict
// means another replica wrote first.
func (r *Rotator) write(ctx context.Context, secret *corev1.Secret, d Decision) (*corev1.Secret, error) {
	upd := secret.DeepCopy()
	if upd.Data == nil {
		upd.Data = map[string][]byte{}
	}
	for _, k := range []string{KeyCert, KeyKey, KeyCA, KeyCAKey} {
		delete(upd.Data, k)
	}
	for k, v := range d.Next.Data() {
		upd.Data[k] = v
	}
	if upd.Type == corev1.SecretTypeTLS {
		// The type requires both keys to exist.
		upd.Data[KeyCert], upd.Data[KeyKey] = d.Next.CertPEM, d.Next.KeyPEM
	}
	res, err := r.client.CoreV1().Secrets(upd.Namespace).Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%w: Secret changed since it was read (another replica renewed first)", errRetry)
	} else if err != nil {
		return nil, fmt.Errorf("updating Secret %s/%s: %w", upd.Namespace, upd.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("webhook certificate renewed", "reason", d.Reason, "resourceVersion", res.ResourceVersion)
	return res, nil
}

// publishedFor returns how long every webhook configuration has carried bundle, as this replica
// has seen it, or 0 when one does not.
func (r *Rotator) publishedFor(now time.Time, bundle []byte) time.Duration {
	everywhere := len(bundle) > 0
	for _, c := range r.configs {
		bundles, err := c.bundles()
		if c.optional && apierrors.IsNotFound(err) {
			continue
		}
		if err != nil || !carries(bundles, bundle) {
			everywhere = false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !everywhere {
		r.published = nil
		return 0
	}
	if !bytes.Equal(r.published, bundle) {
		r.published, r.publishedSince = bytes.Clone(bundle), now
	}
	return now.Sub(r.publishedSince)
}
