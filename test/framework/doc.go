// Package framework is what migranet's Ginkgo suites share: the one starter every suite runs
// through (RunSuite: the environment of test/env or a bare control plane per suite process, the
// spec report for the summary table, the logs of a failing suite kept, the RBAC check of the
// audit log declared once), a namespace per test, builders for nodes, VMIs and migrations, the
// real kubectl, wait helpers with timeouts, and the audit-log reading (audit.go, rbac.go,
// grants.go, refusals.go).
package framework
