// Package guard keeps the migration network for migrations only. The rule itself is two
// ValidatingAdmissionPolicies (manifests/guard/policy.yaml) that the API server enforces with no
// webhook call, so it holds while migranet is down. This package is pure: it says what their
// parameter, the ConfigMap listing the NetworkAttachmentDefinitions migranet manages, holds (Data;
// the settings controller writes it), and holds the same rule in Go (Attaches*) for counting
// objects that attached the network before the policy existed.
package guard
