// Command labproxy is one node's virt-handler migration proxy for migranet's lab
// (make dev and the suites that move migrations' bytes over real node networks):
// the patched KubeVirt v1.9.0 migration-proxy package (the series in
// ../../kubevirt-v1.9.0, built against the work dir run.sh prepares) run as
// virt-handler runs it. Started inside a virt-handler pod sandbox's network
// namespace, it binds its target listeners to that namespace's migration0 address
// (found as virt-handler's FindMigrationIP finds it), uses virt-handler's
// migration mTLS configs (kvproxy, mirroring KubeVirt's pkg/util/tls) over the
// certificates it is given, reads migrations.disableTLS per listener as
// virt-handler reads the KubeVirt CR, and serves the proxy's Prometheus metrics
// (kubevirt_vmi_migration_proxy_*) over HTTPS on :8443, as virt-handler serves
// its /metrics. The lab's virt-handler stand-in (test/sim) drives it with JSON
// lines on stdin (start-target, start-source, stop, bytes, cpu) and reads one
// answer per line on stdout; the first line out says where it listens.
// vendor-patches/run.sh lab-proxy builds it and prints its path.
package main
