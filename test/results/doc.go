// Package results collects what every suite of `make test` ran: the `go test -json` stream of
// each package and, for Ginkgo suites, their spec report. The summary command (test/summary)
// reads them back into one table, so a reader sees per suite how many tests or specs ran,
// passed, failed and were skipped, and a skip without the documented opt-out turns the run red.
//
// The one opt-out is the environment variable MIGRANET_TEST_SKIP: a comma-separated list of
// suite names (see Suites) whose missing prerequisites may skip instead of fail.
package results
