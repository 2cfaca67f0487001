// Package harvestermode proves migranet's Harvester mode on a Harvester stand-in: Harvester's real
// Setting, ClusterNetwork and VLAN CRDs, a witness node, the simulator of Harvester's
// vm-migration-network controller (sim.HarvesterMigrationNetwork), KubeVirt's own virt-api and
// virt-controller, and the nodes' real networks with the real bridge and whereabouts plugins and
// probe agents. migranet chooses Harvester mode by itself (--harvester=auto) and must carry
// health, steering, the guard and the cleanup on Harvester's network without ever writing the
// NAD or the KubeVirt CR (checked from the API server's audit log and the CR's managedFields).
package harvestermode
