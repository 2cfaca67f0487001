// Package webhook is migranet's admission layer: one thin handler per validated kind — Setting
// (setting.go), VirtualMachineInstanceMigration (migration.go), NetworkAttachmentDefinition
// (nad.go) and KubeVirt (kubevirt.go) — the mutating webhook that steers migration target pods
// (steering.go), and setup.go, which registers them with a manager. The
// migration rules, target feasibility and the target pod render are the admission engine in
// migrationcheck/, which the handlers feed from informer stores (migrationcheck.Informers): no API
// request is made while answering a review. The package counts every decision (metrics.go) and
// leaves a Warning event on the VMI of a refused migration (events.go) or of one admitted with
// warnings (warned.go). Serving certificates are in certs/. It never imports netcontroller: the
// readiness snapshot both use is health.Snapshot.
package webhook
