package manifests

import "embed"

// FS holds crd/migranet.io_*.yaml (controller-gen CRDs), webhook/manifests.yaml (controller-gen
// webhook configurations), webhook/scopes.yaml and webhook/steering-scope.yaml (the webhooks'
// selectors) and guard/policy.yaml and guard/inforce.yaml (the migration network's admission policies).
//
//go:embed crd/migranet.io_*.yaml webhook/manifests.yaml webhook/scopes.yaml webhook/steering-scope.yaml guard/policy.yaml guard/inforce.yaml
var FS embed.FS
