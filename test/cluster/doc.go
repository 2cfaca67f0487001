// Package cluster runs migranet's local test control plane: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok built from the Go module proxy by
// test/tools/build.sh, with KubeVirt, NetworkAttachmentDefinition and migranet CRDs installed with
// their real schemas, and kwok nodes labelled like a Harvester cluster running KubeVirt. With
// Options.KubeVirt it also runs KubeVirt's own virt-api and virt-controller (KubeVirtVersion),
// bootstrapped as virt-operator would: KubeVirt's generated CRDs, RBAC and webhook
// configurations, a KubeVirt CA, and service-account identities. Every process it starts is
// stopped by Stop, or killed with the parent through Pdeathsig.
package cluster
