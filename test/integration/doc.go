// Package integration holds migranet's Ginkgo suites against the real local control plane:
// kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok nodes, the virt-operator
// and Multus simulators, and the migranet binary. The specs run serially in one environment.
package integration
