// Command crdgen writes the test fixtures in test/harvester/crds: Harvester's own
// CustomResourceDefinitions (its Setting, settings.harvesterhci.io, and the network controller's
// ClusterNetwork, VlanConfig and VlanStatus, network.harvesterhci.io), taken from the Go modules
// of the versions Harvester v1.8.2 ships, each pinned by its go.sum hash, decoded strictly and
// written re-encoded under a header naming the module, version and path. `make harvester-crds`
// runs it; `make verify` fails when the committed files drift from it.
//
// Usage: crdgen <destination dir>
package main
