// Package decider is the one place that answers "which migration network is in force, who
// decided it, and may migranet write it". Three sources can decide, one per cluster, chosen once at
// start-up by Detect into a Mode:
//
//   - Own: migranet's vm-migration-network setting on a plain KubeVirt install; migranet renders
//     the NAD and writes the KubeVirt CR's spec.configuration.migrations.network.
//   - Harvester: Harvester's settings.harvesterhci.io/vm-migration-network and its controller,
//     which render the NAD and write the KubeVirt CR; migranet writes neither and mirrors.
//   - HCO: the HyperConverged CR's liveMigrationConfig.network, which HCO copies into the KubeVirt
//     CR it owns; migranet writes that one field when its value is newer (status.writtenHash),
//     and mirrors an edit made there after it.
//
// Each is a Decider supplying only what differs — the object that decides besides migranet's
// setting, the pure Decide, where migranet's own network is written — and the settings
// controller (settings/controller) is the one reconciler that reads an Observed, runs Decide and
// carries the Decision out: render, point, clean up, guard, status. The Decision is published on
// the setting's status (status.source, appliedNetwork), which every reader — readiness, path
// health, steering, admission, the NAD webhook's hint, `migranet status` — reads through
// settings.EffectiveNetwork, and nothing else.
//
// The network in force is one of four states, each handled by every reader: the pod network; a
// network migranet judges (settings.Network); a NAD it does not judge (another CNI type, a plugin
// list...: status.source.notJudged, no hash, so no readiness, path verdict or refusal is claimed
// about it); or a NAD that is missing (this cache behind the KubeVirt CR: the last mirror kept).
package decider
