// Package monitoring tests manifests/monitoring: the PrometheusRule's alerts with Prometheus'
// own rule unit tests (`promtool test rules`, promtool built by test/tools/build.sh), and every
// metric the dashboard and the alerts query against the names migranet's code registers plus the
// documented names KubeVirt and the patched virt-handler export.
package monitoring
