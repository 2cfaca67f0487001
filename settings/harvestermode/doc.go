// Package harvestermode runs migranet beside Harvester's own migration network. On a Harvester
// cluster, Harvester's setting settings.harvesterhci.io/vm-migration-network and its controller
// decide the migration network: they render the NetworkAttachmentDefinition and write the KubeVirt
// CR's spec.configuration.migrations.network. Two controllers writing that field would fight, so
// in Harvester mode migranet writes neither: the settings controller's HarvesterMirror
// (settings/controller) reads the NAD the KubeVirt CR names (the network in force), and writes it
// into migranet's own vm-migration-network setting's status.source, with the Configured
// condition; this package holds the pure parts. Everything downstream (per-node addresses,
// capacity and pool cleanup, the guard, the probe agents, Healthy, admission, `migranet status`)
// reads the network in force through settings.EffectiveNetwork, which honours status.source.
//
// Detect chooses the mode at start-up (flag --harvester: auto, on or off). Decide is the pure
// judgement the mirror writes; it never parses a string twice (settings.NetworkFromNAD).
package harvestermode
