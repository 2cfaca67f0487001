// Package kvproxy is the harness's handle on the patched KubeVirt migration proxy:
// it builds a ProxyManager the way virt-handler does (bound to one address, with
// virt-handler's own mTLS configs over a test CA), reads the proxy's Prometheus
// metrics, and counts the process's open fds and goroutines for leak checks.
// The vp_unpatched build tag swaps in the upstream constructor, so the same tests
// can run against an unpatched tree and show what the patches fix.
package kvproxy
