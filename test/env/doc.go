// Package env starts a whole local migranet environment: the control plane from test/cluster, a
// bootstrapped KubeVirt namespace and CR, kwok nodes, the simulators from test/sim, and the real
// migranet binary (`migranet dev`) as a child process that can be killed and restarted. `make dev`
// and every integration suite use it.
package env
