// Package hcomode is the suite of migranet on an HCO install (OpenShift Virtualization, OKD,
// upstream hyperconverged-cluster-operator): HCO's HyperConverged CRD and CR, the KubeVirt CR HCO
// owns, the stand-in of HCO's KubeVirt handler (test/sim/hco.go) beside KubeVirt's own virt-api and
// virt-controller, and the nodes' real networks. migranet chooses HCO mode by itself; the suite
// follows both ways an admin sets the network and counts every write to the KubeVirt and
// HyperConverged CRs.
package hcomode
