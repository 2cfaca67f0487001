// Package framework is what migranet's Ginkgo suites share: one environment (test/env) per suite
// process, a namespace per test, builders for nodes, VMIs and migrations, the real kubectl, wait
// helpers with timeouts, and the audit-log checks (audit.go, rbac.go).
package framework
