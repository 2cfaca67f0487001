// Package webhook is migranet's admission layer: one file per validated kind, each a thin
// admission handler over pure validation functions from the settings package and the readiness
// snapshot of the netcontroller package, plus setup.go, which registers them with a manager. It
// reads only informer caches: no API request is made while answering an admission review. It
// counts every decision (metrics.go) and leaves a Warning event on the VMI of a refused migration
// (events.go) or of one admitted with warnings (warned.go), written asynchronously by the
// manager's event recorder. What admission reads is derived once per informer event, not per
// request: the nodes in name order with their index (nodes.go, nodeindex.go) and the KubeVirt CR
// in force and parsed settings (informed.go). preflight.go asks the same validator what it would
// answer to a migration, rule by rule and node by node, over state read from the API server
// (apistate.go) for `migranet preflight`.
package webhook
