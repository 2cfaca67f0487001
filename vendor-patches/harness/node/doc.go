// Package node is one "node" of the integration suite and the bench: a process
// started inside a network namespace (the test binary re-executed, or the
// bench's upstreampeer) that runs a virt-handler migration proxy and answers
// JSON commands on stdin/stdout: start and stop listeners, report fds,
// goroutines and proxy byte counters, dial out (plain or with a given client
// certificate) to probe reachability, and send or sink the bench's byte streams.
// Client bounds every wait: a node that does not answer in time is killed.
package node
