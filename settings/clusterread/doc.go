// Package clusterread holds migranet's reads of the cluster's API: the KubeVirt CR in force
// (KubeVirtCR), the cluster's own networks a migration range may not overlap (ServiceRanges,
// VirtHandlerAddrs, OwnNetworks) and the scheme of every kind migranet reads or writes
// (NewScheme). It only reads. What it returns feeds the pure rules of package settings, which
// read and write nothing themselves; the webhooks, the settings controller and the network
// controller call it.
package clusterread
