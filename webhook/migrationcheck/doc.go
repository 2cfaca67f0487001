// Package migrationcheck is the admission engine for VirtualMachineInstanceMigrations: it decides
// whether a migration can succeed, and why not, without reading the API itself.
//
//   - State (state.go) is everything the rules read of the cluster, behind one interface with two
//     fillings: Informers (informers.go; informer stores, derived once per event: the nodes with
//     their index, the KubeVirt CR in force, the parsed settings) for the webhook, and APIState
//     (apistate.go; reads of the API server) for `migranet preflight`. GatherCreate and
//     GatherDelete turn a State into the one input the rules judge.
//   - The rules (rules.go): one check per create rule of the registry in settings/rules.go,
//     EvaluateCreate and EvaluateDelete, and Answer, the admission answer they make.
//   - Target feasibility as the scheduler sees it (target.go, nodeindex.go, pods.go, room.go,
//     source.go): node selectors and affinity, taints, readiness, room on the nodes, virt-handler
//     and the cluster network, with a node index that finds a feasible node without walking them.
//   - The target pod render (targetpod/), following KubeVirt v1.8.4's virt-controller.
//   - Preflight (preflight.go): the same rules rule by rule and node by node.
//   - The steering of target pods (steer.go): the node affinity a migration's target pod gets,
//     from the same path answer and target search as the rules; with a migration budget, the
//     migrations streaming into and out of each node (traffic.go, counted from the informers
//     once per event that can change them) and the nodes at their inbound limit
//     (budget_steer.go), preferred against.
//
// checktest/ holds the fixtures its tests and the webhook's share.
package migrationcheck
