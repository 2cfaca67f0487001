// Package settings is the pure domain of migranet's two Settings (API types in v1beta1/):
// everything that can be decided from a value and the cluster's objects, without talking to an
// API server, shared by the webhook, both controllers and the CLI, so a value is judged the same
// way everywhere.
//
//   - vm-migration-network: strict parsing (value.go), canonical form and hash (value.go),
//     validation including the cluster-dependent rules over nodes and KubeVirt's node placement
//     (validate.go, cidr.go, unicast.go, cluster.go), the count of assignable addresses
//     (capacity.go), the effective network in force with its hash and NAD name derived once
//     (effective.go: EffectiveNetwork, EffectiveOf) and the NetworkAttachmentDefinition it renders
//     to (render.go), and a Harvester cluster network's uplink MTUs against the network's
//     (uplinkmtu.go).
//   - migration-policy: the policy and its parser (policy.go) and the one registry of admission
//     rules (rules.go): name, default mode, whether exempt users skip it, the request it judges.
//     The policy parser, the admission metrics, `migranet preflight` and the docs' rule table all
//     derive from the registry; each rule's check lives in webhook/migrationcheck.
//   - shared facts: the readiness snapshot the network controller publishes and admission reads
//     (readiness.go), KubeVirt's facts and the KubeVirt CR in force (kubevirt.go), the scheme
//     (scheme.go), bounded messages (bound.go).
//
// Subpackages: guard (the parameter of the policies that keep other pods and VMs off the
// network), status (how controllers write a Setting's status), controller (the settings and
// policy controllers). This package imports no other migranet package but v1beta1.
package settings
