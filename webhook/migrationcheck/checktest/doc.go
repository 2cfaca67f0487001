// Package checktest holds the test fixtures of the admission engine (webhook/migrationcheck) and
// of the webhook's handlers: nodes, VMIs, VMIMs, a ready KubeVirt CR and a Ready readiness
// snapshot, built the same way for both. Only tests import it.
package checktest
