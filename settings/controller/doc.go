// Package controller holds the controllers of the Settings: Controller applies vm-migration-network
// (the NetworkAttachmentDefinition its value renders to, the KubeVirt CR's
// spec.configuration.migrations.network, cleanup of NADs nothing references, the guard's
// parameter, and the Configured condition with the applied hash), PolicyController writes the
// migration-policy's summary, and EnsureOwned creates both settings with their defaults. It imports
// only the settings packages; cmd starts it.
package controller
