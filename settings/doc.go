// Package settings owns migranet's Setting values (API types in v1beta1/).
//
// For the vm-migration-network setting it owns: strict parsing of the value, its canonical form and
// hash (Canonical, Hash), the pure validation rules (ValidateMigrationNetwork, ValidateSetting)
// including the cluster-dependent ones over nodes and the KubeVirt node placement (Cluster,
// Eligible, HasClusterNetwork), the arithmetic count of assignable migration addresses
// (UsableAddresses), and the NetworkAttachmentDefinition rendered as a pure function of the
// canonical value (RenderNAD, NADName). The webhook, the settings controller and
// `migranet validate` all call these same functions, so a value is judged identically everywhere.
//
// EffectiveNetwork is the one place a Setting's effective value becomes a parsed network, hash and
// NAD name; KubeVirtCR (OldestKubeVirt) the one place the KubeVirt CR in force is chosen.
// unicast.go refuses ranges no node can own for unicast traffic; bound.go bounds every answer
// (BoundErrors, BoundWarnings). Nothing here talks to an API server except KubeVirtCR's read; the settings controller (controller*.go) does. metrics.go
// holds the reconcile-step counter both controllers share (Metrics, RegisterOrReuse).
package settings
