package certs

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of the built-in issuer.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
	// DefaultBundleSettle is how long a new CA bundle must have been in every webhook
	// configuration before the serving certificate switches to the new CA.
	DefaultBundleSettle = time.Minute
)

// backdate is how far before "now" a new certificate becomes valid, so that a client whose clock
// runs a little behind accepts it.
const backdate = time.Hour

// Options configure the Rotator and Plan.
type Options struct {
	// Namespace and SecretName name the Secret that holds the serving certificate.
	Namespace, SecretName string
	// ServiceName is the webhook Service: the serving certificate names <svc>, <svc>.<ns>,
	// <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local (built-in issuer only).
	ServiceName string
	// ExtraSANs are further DNS names or IP addresses of the serving certificate.
	ExtraSANs []string
	// WebhookConfigurations are the ValidatingWebhookConfigurations that receive the CA bundle
	// (built-in issuer only).
	WebhookConfigurations []string
	// MutatingWebhookConfigurations are the MutatingWebhookConfigurations that receive it too;
	// nil: those named as WebhookConfigurations, each injected when it exists (MutatingOptional).
	MutatingWebhookConfigurations []string
	// MutatingOptional: a missing MutatingWebhookConfiguration is no problem (set by WithDefaults
	// when it fills MutatingWebhookConfigurations).
	MutatingOptional bool
	// Rotate makes migranet the issuer: it generates and renews the CA and the serving
	// certificate and injects the bundle. Without it the Secret is only read (cert-manager).
	Rotate bool
	// CAValidity and CertValidity are the lifetimes of new certificates.
	CAValidity, CertValidity time.Duration
	// RenewBefore is how long before it expires the serving certificate is renewed (default a
	// third of CertValidity). The CA is renewed when less than a third of CAValidity remains.
	RenewBefore time.Duration
	// BundleSettle is how long a new CA bundle must have been in every webhook configuration
	// before the serving certificate is re-issued by the new CA.
	BundleSettle time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// WithDefaults returns the options with every unset duration and the clock filled in.
func (o Options) WithDefaults() Options {
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.CertValidity == 0 {
		o.CertValidity = DefaultCertValidity
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = o.CertValidity / 3
	}
	if o.BundleSettle == 0 {
		o.BundleSettle = DefaultBundleSettle
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MutatingWebhookConfigurations == nil {
		// An install names its two configurations alike (migranet); one without the mutating
		// one (an older install) has nothing to inject there.
		o.MutatingWebhookConfigurations, o.MutatingOptional = slices.Clone(o.WebhookConfigurations), true
	}
	return o
}

// Validate reports every problem of the options (after WithDefaults).
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("the namespace of the certificate Secret is empty"))
	}
	for _, m := range validation.IsDNS1123Subdomain(o.SecretName) {
		errs = append(errs, fmt.Errorf("certificate Secret name %q: %s", o.SecretName, m))
	}
	if !o.Rotate {
		return errors.Join(errs...)
	}
	for _, m := range validation.IsDNS1035Label(o.ServiceName) {
		errs = append(errs, fmt.Errorf("webhook Service name %q: %s", o.ServiceName, m))
	}
	for _, san := range o.ExtraSANs {
		if net.ParseIP(san) != nil {
			continue
		}
		msgs := validation.IsDNS1123Subdomain(san)
		if strings.HasPrefix(san, "*.") {
			msgs = validation.IsWildcardDNS1123Subdomain(san)
		}
		for _, m := range msgs {
			errs = append(errs, fmt.Errorf("extra SAN %q is neither an IP address nor a DNS name: %s", san, m))
		}
	}
	if len(o.WebhookConfigurations) == 0 {
		errs = append(errs, errors.New("no webhook configuration to inject the CA bundle into"))
	}
	for _, name := range slices.Concat(o.WebhookConfigurations, o.MutatingWebhookConfigurations) {
		for _, m := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, fmt.Errorf("webhook configuration name %q: %s", name, m))
		}
	}
	if o.CertValidity <= 0 || o.CAValidity <= 0 || o.RenewBefore <= 0 || o.BundleSettle <= 0 {
		errs = append(errs, errors.New("certificate validity, CA validity, renew-before and bundle settle time must be positive"))
	}
	if o.RenewBefore >= o.CertValidity {
		errs = append(errs, fmt.Errorf("renew-before %s must be shorter than the certificate validity %s", o.RenewBefore, o.CertValidity))
	}
	// The CA is renewed when a third of its validity remains; a serving certificate issued by
	// it then still fits into the CA's lifetime, and the old CA outlives the bundle settle time.
	if o.CAValidity < 3*o.CertValidity {
		errs = append(errs, fmt.Errorf("CA validity %s must be at least three times the certificate validity %s", o.CAValidity, o.CertValidity))
	}
	// A serving certificate of the old CA that comes due while a new bundle spreads can wait
	// for it to settle only when it stays valid for twice the settle time.
	if o.RenewBefore <= 2*o.BundleSettle {
		errs = append(errs, fmt.Errorf("renew-before %s must exceed twice the bundle settle time %s", o.RenewBefore, o.BundleSettle))
	}
	if o.CAValidity/3 <= o.BundleSettle {
		errs = append(errs, fmt.Errorf("a third of the CA validity (%s) must exceed the bundle settle time %s", o.CAValidity/3, o.BundleSettle))
	}
	return errors.Join(errs...)
}

// caRenewBefore is how long before it expires the CA is renewed.
func (o Options) caRenewBefore() time.Duration { return o.CAValidity / 3 }

// SANs returns the DNS names and IP addresses the serving certificate must carry, sorted.
func (o Options) SANs() (dns []string, ips []net.IP) {
	if o.ServiceName != "" {
		svc := o.ServiceName
		dns = append(dns, svc, svc+"."+o.Namespace, svc+"."+o.Namespace+".svc", svc+"."+o.Namespace+".svc.cluster.local")
	}
	for _, san := range o.ExtraSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			dns = append(dns, san)
		}
	}
	slices.Sort(dns)
	dns = slices.Compact(dns)
	slices.SortFunc(ips, func(a, b net.IP) int { return slices.Compare(a.To16(), b.To16()) })
	ips = slices.CompactFunc(ips, net.IP.Equal)
	return dns, ips
}
