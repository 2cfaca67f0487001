package manifests

import "embed"

// FS holds crd/migranet.io_*.yaml (controller-gen CRDs) and webhook/manifests.yaml (controller-gen
// ValidatingWebhookConfiguration).
//
//go:embed crd/migranet.io_*.yaml webhook/manifests.yaml
var FS embed.FS
