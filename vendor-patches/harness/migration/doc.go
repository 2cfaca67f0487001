// Package migration is the integration suite: a real QEMU live-migrates between
// two network namespaces through the patched virt-handler migration proxies over
// the migration link, plain and mTLS, single stream and multifd, and the suite
// checks isolation from the management link, refusal of strangers, and leaks.
// Its benchmarks (run.sh bench) compare the patched proxy pair with one direct
// TCP connection and with upstream's unpatched pair (the upstreampeer module),
// and time real migrations through the proxies against direct ones.
package migration
