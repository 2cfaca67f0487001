// Command summary is the bookkeeping of `make test` (see package results).
//
//	summary stream FILE   copy `go test -json` from stdin to FILE, print what a plain go test
//	                      prints (plus why each skip skipped); exit 1 if a package failed
//	summary table DIR     one row per suite from every stream and Ginkgo report in DIR, a total,
//	                      and exit 1 on a failure or on a skip without MIGRANET_TEST_SKIP
package main
