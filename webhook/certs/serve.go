package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// load makes the serving certificate in data the one served. It keeps the current one when data
// holds no usable pair, and a currently valid one rather than an expired or not yet valid
// replacement.
func (r *Rotator) load(ctx context.Context, now time.Time, data map[string][]byte) error {
	pair, err := servingPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return err
	}
	old := r.serving.Load()
	if old != nil && bytes.Equal(old.Certificate[0], pair.Certificate[0]) {
		return nil
	}
	if old != nil && validAt(old.Leaf, now) && !validAt(pair.Leaf, now) {
		return fmt.Errorf("the Secret's serving certificate (valid %s to %s) is not valid now; still serving serial %x",
			pair.Leaf.NotBefore.UTC().Format(time.RFC3339), pair.Leaf.NotAfter.UTC().Format(time.RFC3339), old.Leaf.SerialNumber)
	}
	r.serving.Store(pair)
	ctrl.LoggerFrom(ctx).Info("serving webhook certificate", "serial", fmt.Sprintf("%x", pair.Leaf.SerialNumber),
		"issuer", pair.Leaf.Issuer.CommonName, "notAfter", pair.Leaf.NotAfter.UTC().Format(time.RFC3339),
		"dnsNames", pair.Leaf.DNSNames, "ipAddresses", pair.Leaf.IPAddresses)
	return nil
}

func validAt(c *x509.Certificate, now time.Time) bool {
	return !now.Before(c.NotBefore) && !now.After(c.NotAfter)
}

// ReadyCheck is a readyz check: ready once a currently valid serving certificate is loaded and,
// as the issuer, the CA bundle is in every named webhook configuration.
func (r *Rotator) ReadyCheck(*http.Request) error {
	r.mu.Lock()
	problem := r.problem
	r.mu.Unlock()
	if problem != "" {
		return errors.New(problem)
	}
	c := r.serving.Load()
	if c == nil {
		return fmt.Errorf("no serving certificate loaded from Secret %s/%s yet", r.opts.Namespace, r.opts.SecretName)
	}
	if now := r.opts.Now(); !validAt(c.Leaf, now) {
		return fmt.Errorf("the served certificate is valid from %s to %s, not now", c.Leaf.NotBefore.UTC().Format(time.RFC3339),
			c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// Serving returns the certificate currently served, nil before one is loaded.
func (r *Rotator) Serving() *x509.Certificate {
	if c := r.serving.Load(); c != nil {
		return c.Leaf
	}
	return nil
}
