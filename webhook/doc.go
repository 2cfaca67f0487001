// Package webhook is migranet's admission layer: one file per validated kind, each a thin
// admission handler over pure validation functions from the settings package and the readiness
// snapshot of the netcontroller package, plus setup.go, which registers them with a manager. It
// reads only informer caches: no API request is made while answering an admission review.
package webhook
