// Package env starts a whole local migranet environment: the control plane from test/cluster with
// KubeVirt's own virt-api and virt-controller (unless Options.SimulatedKubeVirt), a bootstrapped
// KubeVirt namespace and CR, kwok nodes, the simulators and the virt-handler stand-in from
// test/sim, and the real migranet binary (`migranet dev`) as a child process that can be killed
// and restarted. `make dev` and every integration suite use it.
package env
