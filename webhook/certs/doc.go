// Package certs owns the webhook serving certificate. It keeps the certificate in one Secret in
// migranet's namespace (tls.crt, tls.key, ca.crt, and ca.key when migranet is the issuer), serves
// it to the webhook server from memory through a watch on that Secret, so every replica picks up
// a new certificate within the watch latency without a restart, and, as the built-in issuer
// (Options.Rotate), generates and renews the CA and the serving certificate and injects the CA
// bundle into the named Validating- and MutatingWebhookConfigurations. With cert-manager as the issuer it only
// reads the Secret.
//
// The decision of what the Secret should hold next is the pure function Plan; the Rotator runs
// it on every change of the Secret or of the webhook configurations and when a certificate comes
// due, and writes with optimistic concurrency so that any number of replicas can run it at once.
package certs
