// Package harness is the test harness of migranet's KubeVirt v1.9.0 patch series.
// It owns nothing at run time: its subpackages drive the patched upstream packages
// (the migration proxy, the launcher's domain metadata) in tests and benchmarks.
package harness
