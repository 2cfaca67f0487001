// Package harvester holds the fixtures a Harvester mode stands on and the Ginkgo suite proving
// them usable: Harvester's own CRDs (crds/, written by crdgen from Harvester's Go modules) are
// installed into a real local kube-apiserver (test/cluster), and objects shaped as Harvester
// v1.8.2's controllers leave them (the vm-migration-network Setting with its annotations and
// `configured` condition, a ClusterNetwork carrying its uplink MTU annotation, a VlanConfig
// with the uplink's MTU) are stored, while objects Harvester's schema forbids are refused. The
// simulator of Harvester's own vm-migration-network controller (sim.HarvesterMigrationNetwork) runs
// against them in a controller-runtime manager, beside a KubeVirt CR in harvester-system, and the
// NAD it renders is read back with settings.HarvesterMigrationNAD and settings.NetworkFromNAD.
// docs/harvester.md cites the Harvester functions each shape follows.
package harvester
