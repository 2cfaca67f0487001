// Package drainbudget is the suite of a drain under a per-node migration budget: five nodes with
// their real networks, KubeVirt's own virt-api and virt-controller (its evacuation controller
// creates the migrations), the virt-handler stand-in streaming each migration between the nodes'
// namespaces, and migranet with a budget whose inbound limit is 1. Its own suite because the
// drain needs two sources and three targets, more nodes than the kubevirt suite's specs are
// written for.
package drainbudget
