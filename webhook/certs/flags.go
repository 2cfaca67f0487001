package certs

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Defaults of the names the manifests use.
const (
	DefaultServiceName          = "migranet-webhook"
	DefaultWebhookConfiguration = "migranet"
)

// BindFlags registers the options' command-line flags on fs (all but the namespace, which the
// caller sets).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.WebhookConfigurations == nil {
		o.WebhookConfigurations = []string{DefaultWebhookConfiguration}
	}
	fs.StringVar(&o.SecretName, "cert-secret", o.SecretName,
		"Secret (in --namespace) holding the webhook serving certificate; when set it is served from memory through a watch on the Secret, instead of from --cert-dir")
	fs.BoolVar(&o.Rotate, "cert-rotation", o.Rotate,
		"built-in issuer: generate and renew the CA and the serving certificate in --cert-secret and inject the CA bundle into --webhook-configuration (without it, cert-manager or another issuer writes the Secret)")
	fs.StringVar(&o.ServiceName, "webhook-service", o.ServiceName, "Service of the webhook server, named by the serving certificate (built-in issuer)")
	fs.Var(&listFlag{&o.WebhookConfigurations, true}, "webhook-configuration",
		"ValidatingWebhookConfiguration(s) to inject the CA bundle into, comma-separated (built-in issuer)")
	fs.Var(&listFlag{&o.MutatingWebhookConfigurations, false}, "mutating-webhook-configuration",
		"MutatingWebhookConfiguration(s) to inject the CA bundle into, comma-separated (built-in issuer; default: the names of --webhook-configuration, each injected when it exists)")
	fs.Var(&listFlag{&o.ExtraSANs, false}, "cert-extra-sans", "further DNS names or IP addresses of the serving certificate, comma-separated (built-in issuer)")
	fs.DurationVar(&o.CertValidity, "cert-validity", DefaultCertValidity, "lifetime of a new serving certificate (built-in issuer)")
	fs.DurationVar(&o.CAValidity, "ca-validity", DefaultCAValidity, "lifetime of a new CA, at least three times --cert-validity (built-in issuer)")
	fs.DurationVar(&o.RenewBefore, "cert-renew-before", 0, "renew the serving certificate this long before it expires (default a third of --cert-validity; built-in issuer)")
}

// CheckFlags reports contradictory or invalid certificate flags, naming the flags.
func (o Options) CheckFlags() error {
	if o.SecretName == "" {
		if o.Rotate {
			return errors.New("--cert-rotation needs --cert-secret: the built-in issuer keeps the certificate in that Secret")
		}
		return nil
	}
	if err := o.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("webhook certificate flags (--cert-*, --ca-validity, --webhook-*): %w", err)
	}
	return nil
}

// listFlag is a comma-separated list flag; the first use replaces the default, later uses add.
type listFlag struct {
	list      *[]string
	isDefault bool
}

func (l *listFlag) String() string {
	if l == nil || l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l *listFlag) Set(s string) error {
	if l.isDefault {
		*l.list, l.isDefault = nil, false
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l.list = append(*l.list, v)
		}
	}
	return nil
}

// fieldManager names migranet in the managed fields of what the certificate code writes.
const fieldManager = "migranet"
