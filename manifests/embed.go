package manifests

import "embed"

// FS holds crd/migranet.io_*.yaml (controller-gen CRDs), webhook/manifests.yaml (controller-gen
// ValidatingWebhookConfiguration) and webhook/scopes.yaml (the webhooks' selectors).
//
//go:embed crd/migranet.io_*.yaml webhook/manifests.yaml webhook/scopes.yaml
var FS embed.FS
