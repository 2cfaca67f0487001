package manifests

import "embed"

// FS holds crd/*.yaml (controller-gen CRDs) and webhook/manifests.yaml (controller-gen
// ValidatingWebhookConfiguration).
//
//go:embed crd/*.yaml webhook/*.yaml
var FS embed.FS
