// Package hcomode runs migranet beside the HyperConverged Cluster Operator (HCO: OpenShift
// Virtualization, OKD, upstream kubevirt/hyperconverged-cluster-operator). There the KubeVirt CR
// is an operand: HCO's KubeVirt handler derives its whole spec from the HyperConverged CR and
// copies it back over any other change (controllers/handlers/kubevirt.go UpdateCR @v1.18.1),
// so migranet never writes the KubeVirt CR in HCO mode. The migration network comes from the
// HyperConverged CR's liveMigrationConfig.network (hcLiveMigrationToKv), and that one field is
// what migranet writes when its own setting's value decides.
//
// Both ways an admin sets the network work: a value on migranet's vm-migration-network setting
// (migranet renders the NAD and writes the HyperConverged field), or the HyperConverged field
// itself (the console, `oc edit hyperconverged`, another operator), which migranet then mirrors
// into status.source as Harvester mode does. Whoever wrote last wins: status.writtenHash records
// the own value migranet wrote last, so a changed value is newer than any HyperConverged edit
// before it, and a HyperConverged edit while the value stays is newer than migranet's write.
//
// Detect chooses the mode at start-up (--hco: auto, on or off); Decide is the pure judgement;
// Field reads and patches the network field of whichever HyperConverged API version is served.
// The RBAC (a Role in the KubeVirt namespace) is in cmd/migranet/rbac.go.
package hcomode
